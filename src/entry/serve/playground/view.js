// The playground's second script (after run.js, in the same <script>): drawing the answer,
// citations, timeline and graph; what a waiting run asks; the threads and runs lists; the start
// of the page.
// ---- rendering ---------------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === 'class') node.className = value;
    else if (key.startsWith('data-')) node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children) node.append(child);
  return node;
}

function render() {
  renderAnswer();
  renderInterrupt();
  renderTimeline();
  renderGraph();
}

function renderAnswer() {
  const final = run && run.final;
  const status = $('run-status');
  status.dataset.status = run ? run.status : '';
  const asked = run && run.waiting && run.waiting.interrupt;
  status.textContent = !run ? '' : final ? `Run ${run.id}: ${run.status}`
    : asked ? `Run ${run.id}: waiting for your ${asked.kind === 'approve' ? 'approval' : 'answer'}`
      : run.id ? `Run ${run.id}: running` : 'Starting…';
  const from = final && final.metadata && final.metadata.forked_from;
  $('forked-from').hidden = !from;
  $('forked-from').replaceChildren(...(from ? [`Forked from run ${from.run_id} after step ${from.step}. `,
    el('button', { type: 'button', id: 'open-original', onclick: () => openRun(from.run_id) }, 'Open the original run')] : []));
  const discarded = new Set(run ? run.discarded : []);
  const live = run && run.attempt && !discarded.has(run.attempt) ? run.attempts[run.attempt] : '';
  $('answer').textContent = final ? (final.answer || final.error && final.error.message || '') : live || '';
  $('discarded').replaceChildren(...(run ? run.discarded : []).map((attempt) =>
    el('li', {}, `Answer ${attempt} (discarded): ${run.attempts[attempt] || ''}`)));
  const limits = final && final.metadata ? final.metadata.limits_hit || [] : [];
  const limit = $('limit');
  limit.hidden = limits.length === 0;
  limit.textContent = limits.length === 0 ? '' : `${run.status === 'best_effort' ? 'best_effort: ' : ''}stopped by ${limits
    .map((name) => `${name} (${LIMITS[name] || 'a limit'})`).join('; ')}`;
  $('citations').replaceChildren(...(final && final.citations || []).map((c, i) => el('li', {},
    el('details', {}, el('summary', {}, `[${i + 1}] ${c.title}`),
      el('p', {}, el('span', { class: 'source' }, c.url)),
      passageText(c.url),
      passageOf(c.url),
      citedBy(c)))));
  if (final && !(final.citations || []).length) $('citations').append(el('li', { class: 'summary' }, 'None: the answer cites no source.'));
  const unsupported = (final && final.metadata && final.metadata.attribution && final.metadata.attribution.unsupported) || [];
  if (unsupported.length) $('citations').append(el('li', { class: 'unsupported' },
    'Not supported by any source: ', ...unsupported.map((s) => el('q', {}, s))));
  const m = final && final.metadata;
  $('summary').textContent = m ? `${m.total_steps} steps, ${m.model_calls} model calls, ${m.tokens.total} tokens, ` +
    `route ${m.route || 'none'}, ${m.query_transformation_retry_count} rewrites, ${m.hallucination_retry_count} regenerations, ` +
    `${m.infrastructure_retries} infrastructure retries` + (m.speculation ? `, speculation ${m.speculation.used} used / ${m.speculation.discarded} discarded` : '') : '';
}

// What a waiting run asks, above its (empty) answer: a clarifying question, whose options fill
// the answer box, or a step to approve or deny. run.js's answerRun sends the reply.
let askedFor = null;
function renderInterrupt() {
  const asked = run && run.waiting && run.waiting.interrupt;
  $('interrupt').hidden = !asked;
  if (!asked) {
    askedFor = null;
    return;
  }
  // A new question starts with an empty answer box; a redraw of the same one keeps what is typed.
  const key = `${run.id} ${asked.kind} ${asked.expires_at}`;
  if (key !== askedFor) $('interrupt-answer').value = '';
  askedFor = key;
  const clarify = asked.kind === 'clarify';
  $('interrupt').dataset.kind = asked.kind;
  $('interrupt-clarify').hidden = !clarify;
  $('interrupt-decide').hidden = clarify;
  $('interrupt-question').textContent = clarify ? asked.question : `Approve the step ${asked.step}?`;
  $('interrupt-what').textContent = clarify ? '' : `It would run ${asked.step} with: “${asked.what || ''}”`;
  const options = clarify ? asked.options || [] : [];
  $('interrupt-options-label').hidden = options.length === 0;
  $('interrupt-options').replaceChildren(...options.map((option) => el('button', {
    type: 'button', class: 'option',
    onclick: () => { $('interrupt-answer').value = option; $('interrupt-answer').focus(); },
  }, option)));
  const expires = asked.expires_at ? new Date(asked.expires_at) : null;
  $('interrupt-expires').textContent = expires && !isNaN(expires) ? `${clarify ? 'Answer' : 'Decide'} by ${expires.toLocaleString()}; ` +
    'after that the run ends best_effort with what it has.' : '';
}

// The cited passage's text, once read.
// Who cited a source where the answer does, and the sentences it supports.
function citedBy(c) {
  const who = c.attributed ? 'Cited by the service (the model did not cite it here)' : 'Cited by the model';
  const said = (c.sentences || []).length ? `; supports: ${c.sentences.map((s) => `“${s}”`).join(' ')}` : '';
  return el('p', { class: 'cited-by' }, who + said);
}

function passageText(url) {
  const text = run.passages && run.passages[url];
  return text ? el('blockquote', { class: 'passage' }, text) : el('p', { class: 'summary' }, 'Passage text not loaded.');
}

// What the run's retrieval steps said about a cited source (its query and how it was found).
function passageOf(url) {
  const step = (run.steps || []).find((s) => (s.details.sources || []).includes(url));
  if (!step) return el('p', {}, 'Cited from the passages the run retrieved.');
  return el('p', {}, `Retrieved by ${step.name} for “${step.details.query || run.question}” (${step.details.retrieval || 'search'}).`);
}

function marks(step, index, steps) {
  const out = [];
  const d = step.details;
  if (step.name === 'transform_query') out.push(['rewrite ' + (d.retry || ''), 'warn']);
  if (step.name === 'generate' && d.regeneration > 0) out.push([`regeneration ${d.regeneration}`, 'warn']);
  if (step.name === 'generate' && steps.slice(index + 1).some((s) => s.name === 'generate')) out.push(['answer discarded', 'bad']);
  if (d.grounded === false) out.push(['not grounded', 'bad']);
  if (d.useful === false) out.push(['not useful', 'bad']);
  if (d.fallback === true) out.push(['web fallback', 'warn']);
  if (typeof d.fallback === 'string') out.push([`${d.fallback} fallback`, 'warn']);
  if (d.retry && step.name !== 'transform_query') out.push([`retry ${d.retry}`, 'warn']);
  if (d.data_source) out.push([`route: ${d.data_source}`, '']);
  if (d.interrupt) out.push([`asked: ${d.interrupt.kind}`, 'warn']);
  if (d.relevant !== undefined && d.graded !== undefined) out.push([`${d.relevant} of ${d.graded} relevant`, d.relevant < d.graded ? 'bad' : '']);
  return out.map(([text, kind]) => el('span', { class: `mark ${kind}` }, text));
}

function stepRow(step, index, steps) {
  const duration = step.seconds === undefined ? '' : `${(step.seconds * 1000).toFixed(1)} ms`;
  return [
    el('span', { class: 'step-name' }, step.name),
    el('span', { class: 'duration' }, duration),
    ...marks(step, index, steps),
    el('details', {}, el('summary', {}, 'details'), el('pre', {}, JSON.stringify(step.details, null, 2))),
  ];
}

// "Fork from here" after step `number` (named `name`) of an ended run, unless it was the last:
// a new run from the state that step left, with the question box's question when it differs.
function forkButton(number, name, steps) {
  if (!run || !run.id || !run.final || run.status === 'running' || number >= steps.length) return [];
  return [el('button', {
    type: 'button', class: 'fork-here', 'data-fork-step': String(number),
    title: `A new run from the state after step ${number} (${name}); steps 1 to ${number} are not run again. Edit the question above to ask another one from there.`,
    ariaLabel: `Fork from here: a new run after step ${number}, ${name}`,
    onclick: () => forkFrom(number),
  }, 'Fork from here')];
}

function renderTimeline() {
  const steps = run ? run.steps : [];
  const rows = [];
  for (let i = 0; i < steps.length;) {
    const step = steps[i];
    const previous = steps[i - 1];
    if (BRANCHES.has(step.name) && previous && previous.name === 'kg_retrieval' && previous.details.speculative === true) {
      // The fork's branches, recorded one after the other, ran at once: drawn side by side.
      const fork = el('li', { class: 'fork', 'data-fork': GRAPH.fork.at },
        el('span', { class: 'step-name' }, `${GRAPH.fork.at}: branches run at once`));
      const row = el('div', { class: 'branches' });
      const seen = new Set();
      while (i < steps.length && BRANCHES.has(steps[i].name) && !seen.has(steps[i].name)) {
        seen.add(steps[i].name);
        row.append(el('div', { 'data-step': steps[i].name }, ...stepRow(steps[i], i, steps)));
        i++;
      }
      fork.append(row, ...forkButton(i, GRAPH.fork.at, steps));
      rows.push(fork);
      continue;
    }
    rows.push(el('li', { 'data-step': step.name }, ...stepRow(step, i, steps), ...forkButton(i + 1, step.name, steps)));
    i++;
  }
  const limits = run && run.final && run.final.metadata ? run.final.metadata.limits_hit || [] : [];
  if (limits.length) rows.push(el('li', { class: 'limit', 'data-limit': limits.join(' ') }, `stopped: ${limits.join(', ')}`));
  $('timeline').replaceChildren(...rows);
}

// ---- the graph -------------------------------------------------------------------------

const SVG = 'http://www.w3.org/2000/svg';
function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

// Layers by the longest path from start, over the edges that do not close a cycle (found by
// a depth-first walk from start: the loops' edges back).
function layout() {
  const names = ['start', ...GRAPH.nodes, 'end'];
  const next = {};
  for (const e of GRAPH.edges) (next[e.from] = next[e.from] || []).push(e.to);
  const back = new Set();
  const onPath = new Set();
  const done = new Set();
  (function walk(node) {
    onPath.add(node);
    for (const to of next[node] || []) {
      if (onPath.has(to)) back.add(`${node}>${to}`);
      else if (!done.has(to)) walk(to);
    }
    onPath.delete(node);
    done.add(node);
  })('start');
  const rank = Object.fromEntries(names.map((n) => [n, 0]));
  const forward = GRAPH.edges.filter((e) => !back.has(`${e.from}>${e.to}`));
  for (let pass = 0; pass < names.length; pass++) {
    for (const e of forward) rank[e.to] = Math.max(rank[e.to], rank[e.from] + 1);
  }
  const layers = {};
  for (const n of names) (layers[rank[n]] = layers[rank[n]] || []).push(n);
  const pos = {};
  const width = 860;
  for (const [r, layer] of Object.entries(layers)) {
    layer.forEach((n, i) => { pos[n] = { x: (width / (layer.length + 1)) * (i + 1), y: 30 + Number(r) * 64 }; });
  }
  return { pos, back, height: 60 + Math.max(...Object.values(rank)) * 64 };
}

function renderGraph() {
  const { pos, back, height } = layout();
  const g = $('graph');
  g.setAttribute('viewBox', `0 0 860 ${height}`);
  const path = run ? ['start', ...runPath(run.steps), ...(run.final ? ['end'] : [])] : [];
  const visited = new Set(path);
  const taken = new Set(path.slice(1).map((n, i) => `${path[i]}>${n}`));
  const defs = svg('defs', {});
  const marker = svg('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 6, markerHeight: 6, orient: 'auto-start-reverse' });
  marker.append(svg('path', { d: 'M 0 0 L 10 5 L 0 10 z', fill: '#8a93a3' }));
  defs.append(marker);
  const items = [defs];
  for (const e of GRAPH.edges) {
    const a = pos[e.from], b = pos[e.to];
    // Back edges swing out to the right; edges over several layers curve around the nodes
    // between, alternately left and right.
    const span = Math.round(Math.abs(b.y - a.y) / 64);
    const side = GRAPH.edges.indexOf(e) % 2 === 0 ? 1 : -1;
    const bend = back.has(`${e.from}>${e.to}`) || b.y <= a.y ? 90 : span > 1 ? side * (30 + 30 * span) : 0;
    const d = `M ${a.x} ${a.y + 11} Q ${(a.x + b.x) / 2 + bend} ${(a.y + b.y) / 2} ${b.x} ${b.y - 11}`;
    const cls = `edge${e.loop ? ' loop' : ''}${taken.has(`${e.from}>${e.to}`) ? ' taken' : ''}`;
    const line = svg('path', { d, class: cls, 'marker-end': 'url(#arrow)' });
    line.append(svg('title', {}, `${e.from} → ${e.to}${e.loop ? ` (while ${e.loop} < its limit)` : ''}`));
    items.push(line);
  }
  for (const branch of GRAPH.fork.branches) {
    const a = pos[GRAPH.fork.at], b = pos[branch];
    const cls = `edge loop${visited.has(GRAPH.fork.at) && visited.has(branch) ? ' taken' : ''}`;
    items.push(svg('path', { d: `M ${a.x} ${a.y} L ${b.x} ${b.y}`, class: cls }));
  }
  for (const [name, p] of Object.entries(pos)) {
    const group = svg('g', { class: `node${visited.has(name) ? ' visited' : ''}`, 'data-node': name });
    const w = Math.max(60, name.length * 7 + 16);
    group.append(svg('rect', { x: p.x - w / 2, y: p.y - 11, width: w, height: 22, rx: name === 'start' || name === 'end' ? 11 : 3 }));
    group.append(svg('text', { x: p.x, y: p.y + 4, 'text-anchor': 'middle' }, name === GRAPH.fork.at ? `${name} (fork)` : name));
    items.push(group);
  }
  g.replaceChildren(...items);
  $('graph-summary').textContent = `${GRAPH.nodes.length} nodes, ${GRAPH.edges.length} edges; bounded loops: ` +
    GRAPH.loops.map((l) => `${l.counter} < ${l.limit}`).join(', ') +
    (run && run.steps.length ? `. This run's path: ${path.join(' → ')}.` : '.');
}

// The nodes a run went through: its steps, with the fork's node before its branches.
function runPath(steps) {
  const path = [];
  steps.forEach((step, i) => {
    const previous = steps[i - 1];
    if (BRANCHES.has(step.name) && previous && previous.name === 'kg_retrieval' && previous.details.speculative === true) {
      path.push(GRAPH.fork.at);
    }
    path.push(step.name);
  });
  return path;
}

// ---- threads and runs ------------------------------------------------------------------

async function getJson(url) {
  const response = await fetch(url, { headers: { accept: 'application/json' } });
  if (!response.ok) throw new Error(problem('Could not read the threads and runs', response.status, await response.text()));
  return response.json();
}

async function refreshLists() {
  let threads, runs;
  try {
    [threads, runs] = await Promise.all([getJson('/threads?limit=20'), getJson('/workflow/runs?limit=20')]);
  } catch (e) {
    if (e instanceof TypeError) serverDown('the lists could not be read');
    else notice(e.message);
    return;
  }
  $('threads').replaceChildren(...threads.threads.map((t) => el('li', {},
    el('button', { type: 'button', onclick: () => { $('thread').value = t.thread_id; $('question').focus(); } },
      `${t.thread_id} (${t.turns} turns)`))));
  if (!threads.threads.length) $('threads').append(el('li', {}, 'No threads yet.'));
  $('runs').replaceChildren(...runs.runs.map((r) => {
    const item = el('li', { 'data-run': r.run_id },
      el('button', { type: 'button', onclick: () => openRun(r.run_id), title: `Open run ${r.run_id}` },
        el('span', { class: 'id' }, r.run_id.slice(0, 8))), ` ${r.status}`);
    if (r.status === 'running' || r.status === 'suspended') {
      item.append(el('button', { type: 'button', onclick: async () => {
        try { await fetch(`/workflow/runs/${encodeURIComponent(r.run_id)}/cancel`, { method: 'POST' }); } catch (e) { serverDown('the cancel was not sent'); }
        refreshLists();
      } }, 'Cancel'));
    }
    return item;
  }));
  if (!runs.runs.length) $('runs').append(el('li', {}, 'No runs yet.'));
}

// Opens a stored run: its events from the first step (or after the last one seen, when this
// tab already followed it), then live while it runs.
async function openRun(runId, saved) {
  notice('');
  if (saved && saved.id === runId) {
    run = saved;
  } else {
    newRun(runId, '');
  }
  history.replaceState(null, '', `/?run=${encodeURIComponent(runId)}`);
  render();
  setState('running');
  let response;
  try {
    const headers = run.lastId ? { 'Last-Event-ID': run.lastId } : {};
    response = await fetch(`/workflow/runs/${encodeURIComponent(runId)}/events`, { headers });
  } catch (e) {
    serverDown(`run ${runId} could not be read`);
    setState('error');
    return;
  }
  if (!response.ok) {
    notice(problem(`Run ${runId} could not be read`, response.status, await response.text()));
    setState('error');
    return;
  }
  await follow(response);
}

// ---- start -------------------------------------------------------------------------------

$('ask').addEventListener('submit', ask);
$('cancel').addEventListener('click', cancel);
$('refresh').addEventListener('click', refreshLists);
$('interrupt').addEventListener('submit', (e) => {
  e.preventDefault();
  if (!run || !run.waiting || run.waiting.interrupt.kind !== 'clarify') return;
  const answer = $('interrupt-answer').value.trim();
  if (!answer) {
    notice('Type an answer first (or pick one of the subjects).');
    $('interrupt-answer').focus();
    return;
  }
  answerRun({ answer });
});
$('interrupt-approve').addEventListener('click', () => answerRun({ approve: true }));
$('interrupt-deny').addEventListener('click', () => answerRun({ approve: false }));
$('question').addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) ask(e);
});

(function start() {
  renderGraph();
  const params = new URLSearchParams(location.search);
  let saved = null;
  try { saved = JSON.parse(sessionStorage.getItem(SAVED) || 'null'); } catch (e) { saved = null; }
  refreshLists();
  if (params.get('run')) {
    // A reload mid-run: pick the run back up after the last event this tab received.
    openRun(params.get('run'), saved);
  } else if (params.get('q')) {
    $('question').value = params.get('q');
    for (const field of ['mode', 'thread', 'max_tokens', 'speculation', 'filters']) {
      const value = params.get(field);
      const input = document.querySelector(`[name="${field}"]`);
      if (value !== null && input) input.value = value;
    }
    ask();
  }
})();
