// The playground's first script: its state, asking, reading the event stream of a run,
// picking a dropped or reloaded run back up (Last-Event-ID), and answering a run that waits for
// a person. view.js draws what it holds.
'use strict';
const GRAPH = JSON.parse(document.getElementById('graph-data').textContent);
const BRANCHES = new Set(GRAPH.fork.branches);
const SAVED = 'bounded-rag.run';
const RESUME_TRIES = 5;
const LIMITS = {
  step_limit: 'the step limit (WORKFLOW_RECURSION_LIMIT) was reached',
  deadline: 'the deadline budget could not cover the next step',
  token_budget: "the run's token budget could not cover the next step",
  max_retries: 'the answer was still not useful after MAX_RETRIES query rewrites',
  max_regenerations: 'the answer was still not grounded after MAX_REGENERATIONS regenerations',
  no_sources: 'neither the knowledge base nor web search found anything to answer from',
  answer_length: 'the answer reached its output cap (LLM_MAX_ANSWER_TOKENS)',
  model_unavailable: 'the model could not answer; the answer quotes the documents found',
  model_unusable: "the model's answers did not pass the answer checks; the answer quotes the documents found",
};
const $ = (id) => document.getElementById(id);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// The run on the page: its id, the last event id received, its steps and answer so far.
let run = null;

function notice(text) {
  $('notice').textContent = text || '';
  $('notice').hidden = !text;
}

function setState(state) {
  document.body.dataset.state = state;
  $('ask-button').disabled = state === 'running';
  $('cancel').disabled = state !== 'running' || !run || !run.id;
  $('interrupt-fields').disabled = state === 'running';
}

function save() {
  if (run) sessionStorage.setItem(SAVED, JSON.stringify(run));
}

function serverDown(what) {
  notice(`Cannot reach the bounded-rag server at ${location.origin} (${what}). Is \`bounded-rag serve\` still running? Start it again and retry.`);
}

// What an error answer says: this server's own error about a deployed stack (`serve --remote`:
// refused, unreachable) as it is, else `what (HTTP status): the API's message`.
function problem(what, status, text) {
  let json = null;
  try { json = JSON.parse(text); } catch (e) { /* not JSON */ }
  if (json && typeof json.error === 'string' && json.error.startsWith('remote_')) return json.message;
  const message = json ? (json.field ? `${json.field} ${json.message}` : json.message || json.error || text) : text;
  return `${what} (HTTP ${status}): ${message}`;
}

function filtersOf(text) {
  const parts = text.split(',').map((s) => s.trim()).filter(Boolean).map((part) => {
    const at = part.indexOf('=');
    if (at < 1) throw new Error(`The filter "${part}" is not KEY=VALUE (e.g. product=durian).`);
    return { equals: { key: part.slice(0, at).trim(), value: part.slice(at + 1).trim() } };
  });
  if (parts.length === 0) return null;
  return parts.length === 1 ? parts[0] : { and: parts };
}

function requestBody() {
  const body = { question: $('question').value.trim() };
  if ($('mode').value) body.mode = $('mode').value;
  if ($('thread').value.trim()) body.thread_id = $('thread').value.trim();
  if ($('max-tokens').value) body.max_tokens = Number($('max-tokens').value);
  if ($('speculation').value) body.speculation = $('speculation').value;
  const filters = filtersOf($('filters').value);
  if (filters) body.filters = filters;
  return body;
}

function newRun(id, question) {
  run = { id, question, lastId: null, steps: [], attempts: {}, discarded: [], status: 'running', final: null, waiting: null };
  save();
  render();
}

// ---- asking and following a run ------------------------------------------------------

async function ask(event) {
  if (event) event.preventDefault();
  let body;
  try {
    body = requestBody();
  } catch (e) {
    notice(e.message);
    return;
  }
  if (!body.question) {
    notice('Type a question first.');
    $('question').focus();
    return;
  }
  notice('');
  newRun(null, body.question);
  setState('running');
  let response;
  try {
    response = await fetch('/workflow/run', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify(body),
    });
  } catch (e) {
    serverDown('the question was not sent');
    run.status = 'unsent';
    setState('error');
    return;
  }
  const type = response.headers.get('content-type') || '';
  if (!type.startsWith('text/event-stream')) {
    const text = await response.text();
    if (response.ok) {
      // A stack without the stream function (an HTTP API, `serve --remote`) answers the run
      // as the `api` function does: one JSON body, the last event's.
      let body = null;
      try { body = JSON.parse(text); } catch (e) { /* not JSON */ }
      if (body && body.run_id && body.status) return showRun(body);
    }
    // Refused before the run started (rate, validation, a busy thread, a remote stack's
    // signature check): a JSON error.
    notice(problem('The server refused the question', response.status, text));
    run.status = 'refused';
    setState('error');
    return;
  }
  run.id = response.headers.get('x-run-id');
  save();
  history.replaceState(null, '', `/?run=${encodeURIComponent(run.id)}`);
  setState('running');
  await follow(response);
}

// Reads a stream until its last event; a stream that ends without one dropped, and is picked
// back up from the last event received.
async function follow(response) {
  const ended = await consume(response);
  if (ended) return finish();
  await resume();
}

async function consume(response) {
  let ended = false;
  try {
    for await (const event of events(response.body)) {
      if (event.id) run.lastId = event.id;
      ended = handle(event) || ended;
      save();
    }
  } catch (e) {
    // The connection broke mid-stream.
  }
  return ended;
}

async function resume() {
  for (let attempt = 1; attempt <= RESUME_TRIES; attempt++) {
    notice(run.suspended
      ? `The run was suspended and continues on the worker; following it, try ${attempt} of ${RESUME_TRIES}.`
      : `The stream dropped (last event ${run.lastId || 'none'}); picking the run back up, try ${attempt} of ${RESUME_TRIES}.`);
    run.suspended = false;
    await sleep(400 * attempt);
    let response;
    try {
      const headers = run.lastId ? { 'Last-Event-ID': run.lastId } : {};
      response = await fetch(`/workflow/runs/${encodeURIComponent(run.id)}/events`, { headers });
    } catch (e) {
      continue;
    }
    if (!response.ok) {
      notice(problem('Could not pick the run back up', response.status, await response.text()));
      setState('error');
      return;
    }
    if (await consume(response)) {
      notice('');
      return finish();
    }
  }
  serverDown(`the stream of run ${run.id} dropped and could not be resumed`);
  setState('error');
}

// Server-sent events from a response body: {id, event, data}.
async function* events(stream) {
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event = { id: null, event: 'message', data: '' };
      for (const line of frame.split('\n')) {
        const colon = line.indexOf(':');
        if (colon < 0) continue;
        const field = line.slice(0, colon);
        const text = line.slice(colon + 1).replace(/^ /, '');
        if (field === 'id') event.id = text;
        else if (field === 'event') event.event = text;
        else if (field === 'data') event.data += text;
      }
      event.data = event.data ? JSON.parse(event.data) : null;
      yield event;
    }
  }
}

// Applies one event; true for the last event of a run.
function handle(event) {
  const data = event.data || {};
  switch (event.event) {
    case 'step':
      run.steps.push({ name: data.name, details: data.details || {}, counters: data.counters || {} });
      renderTimeline();
      renderGraph();
      return false;
    case 'token':
      run.attempts[data.attempt] = (run.attempts[data.attempt] || '') + data.text;
      run.attempt = data.attempt;
      renderAnswer();
      return false;
    case 'discarded':
      run.discarded.push(data.attempt);
      renderAnswer();
      return false;
    case 'suspended':
      // Out of time in this invocation: the worker continues it; the stream is picked up again.
      run.suspended = true;
      $('run-status').textContent = 'suspended: the worker continues the run';
      return false;
    case 'final':
    case 'cancelled':
    case 'interrupt':
      // `interrupt`: the run waits for a person; what it asks is shown, answered by answerRun.
      run.final = event.event === 'interrupt' ? null : data;
      run.waiting = event.event === 'interrupt' ? data : null;
      run.status = data.status || event.event;
      if (Array.isArray(data.workflow_steps)) {
        run.steps = data.workflow_steps.map((s) => ({ name: s.name, details: s.details || {}, seconds: s.processing_time }));
      }
      render();
      return true;
    default:
      return false;
  }
}

async function finish() {
  await loadPassages();
  setState(run.waiting ? 'waiting' : 'done');
  if (run.waiting && run.waiting.interrupt && run.waiting.interrupt.kind === 'clarify') $('interrupt-answer').focus();
  refreshLists();
}

// A run's JSON (an answer without a stream: a stack without the stream function, a fork, an
// answered wait) shown as the last event its stream would have sent.
function showRun(body) {
  run.id = body.run_id;
  history.replaceState(null, '', `/?run=${encodeURIComponent(run.id)}`);
  const last = body.status === 'waiting' ? 'interrupt' : body.status === 'cancelled' ? 'cancelled' : 'final';
  handle({ id: null, event: last, data: body });
  save();
  return finish();
}

// The text of each cited passage (a route of the playground: the API's answer has only
// titles and URLs).
async function loadPassages() {
  if (!run || !run.id || !run.final || !(run.final.citations || []).length) return;
  try {
    const response = await fetch(`/playground/runs/${encodeURIComponent(run.id)}/passages`);
    if (!response.ok) return;
    const body = await response.json();
    run.passages = Object.fromEntries(body.passages.map((p) => [p.url, p.text]));
    save();
    renderAnswer();
  } catch (e) {
    // The citations keep their sources; the passages are shown when the server answers again.
  }
}

// Forks the run on the page after step `step` (POST /workflow/runs/{run_id}/fork): the new run
// is shown as it ends (or followed, when it was suspended); the old one stays as it was.
async function forkFrom(step) {
  if (!run || !run.id || !run.final) return;
  const from = run.id;
  const original = run.final.question || run.question;
  const body = { from_step: step };
  const question = $('question').value.trim();
  if (question && question !== original) body.question = question;
  if ($('mode').value) body.mode = $('mode').value;
  notice('');
  newRun(null, body.question || original);
  setState('running');
  let response;
  try {
    response = await fetch(`/workflow/runs/${encodeURIComponent(from)}/fork`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(body),
    });
  } catch (e) {
    serverDown('the fork was not sent');
    run.status = 'unsent';
    setState('error');
    return;
  }
  const text = await response.text();
  let answer = null;
  try { answer = JSON.parse(text); } catch (e) { /* not JSON */ }
  if (response.status === 202 && answer && answer.run_id) return openRun(answer.run_id);
  if (answer && answer.run_id && answer.status) return showRun(answer);
  notice(problem('The server refused the fork', response.status, text));
  run.status = 'refused';
  setState('error');
}

// A fresh Idempotency-Key (crypto.randomUUID needs a secure context, which a LAN address over
// plain http is not).
function newKey() {
  if (crypto.randomUUID) return crypto.randomUUID();
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join('');
}

// Answers the waiting run on the page (POST /workflow/runs/{run_id}/resume) with `reply`:
// {answer} to a clarifying question, {approve} for a step. The same run goes on and is shown as
// it ends (or waits again). The same reply sent again, after the server could not be reached,
// carries the same Idempotency-Key (kept in sessionStorage), so it is never answered twice.
async function answerRun(reply) {
  if (!run || !run.id || !run.waiting) return;
  const body = JSON.stringify(reply);
  if (!run.reply || run.reply.body !== body) run.reply = { body, key: newKey() };
  save();
  notice('');
  setState('running');
  $('run-status').textContent = `Run ${run.id}: answered, running on…`;
  let response;
  try {
    response = await fetch(`/workflow/runs/${encodeURIComponent(run.id)}/resume`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', 'idempotency-key': run.reply.key },
      body,
    });
  } catch (e) {
    serverDown('the answer was not sent; sending it again answers the run once');
    renderAnswer();
    setState('waiting');
    return;
  }
  const text = await response.text();
  let answer = null;
  try { answer = JSON.parse(text); } catch (e) { /* not JSON */ }
  if (response.ok && answer && answer.run_id) {
    run.reply = null;
    // The answered run replaces the waiting one: a reload reads its events from the first.
    run.lastId = null;
    if (response.status === 202) return openRun(answer.run_id);
    return showRun(answer);
  }
  const message = problem('The server refused the answer', response.status, text);
  notice(message);
  // 409: answered elsewhere, or the wait ran out; the run as it is now.
  if (response.status === 409) return reread(message);
  renderAnswer();
  setState('waiting');
}

// Shows the run on the page as the API has it now, keeping `message` on show.
async function reread(message) {
  const id = run.id;
  let body = null;
  try {
    const response = await fetch(`/workflow/runs/${encodeURIComponent(id)}`, { headers: { accept: 'application/json' } });
    if (response.ok) body = await response.json();
  } catch (e) {
    // Left as it was: the message says what happened.
  }
  if (body && (body.status === 'running' || body.status === 'suspended')) {
    await openRun(id);
    if ($('notice').hidden) notice(message);
    return;
  }
  if (body && body.run_id) return showRun(body);
  setState('error');
}

async function cancel() {
  if (!run || !run.id) return;
  try {
    const response = await fetch(`/workflow/runs/${encodeURIComponent(run.id)}/cancel`, { method: 'POST' });
    if (!response.ok) notice(`Cancel answered HTTP ${response.status}: ${await response.text()}`);
  } catch (e) {
    serverDown('the cancel was not sent');
  }
}
