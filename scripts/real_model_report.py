#!/usr/bin/env python3
"""The report of scripts/real-model.sh: one row per run, then totals. Standard library only.

Reads OUT/runs.tsv (name, mode, exit code, wall seconds, question, set) and, per run,
OUT/NAME.out: the response JSON (`ask --json`) or JSON lines (`ask --stream --json`, the
last one the `final` event). Writes OUT/NAME.json (the response) and OUT/summary.json.

Columns: status, limits_hit, answer length (chars), model_calls (metadata: replies received,
re-asks included), re-asks (see `reasks`), completion tasks the server started during the run
(every attempt that reached the slot, failed ones too), streamed chars (text of `token` events; stream runs), wall
seconds.
"""
import argparse
import collections
import json
import os
import re
import sys

# Model calls one step makes when no reply is re-asked. grade_documents makes one per graded
# document; grade_hallucinations also grades the answer in the same step when answer checking
# is on ("answer_checked"). Steps not listed make no model call.
def expected_calls(step):
    name = step.get("name")
    d = step.get("details") or {}
    if name in ("route_question", "transform_query", "contextualize_question"):
        return 1
    if name == "generate":
        return 1
    if name == "grade_documents":
        return d.get("graded", 0)
    if name == "grade_hallucinations":
        return 2 if d.get("answer_checked") else 1
    if name == "grade_answer":
        return 1
    return 0


def reasks(response):
    """Re-asks visible in the response: per step, model calls beyond the step's own calls
    (`details.model_calls` minus `expected_calls`), plus one per failure whose error says the
    reply stayed malformed "after N attempts" (N - 1 re-asks; that step has no record)."""
    n = 0
    for step in response.get("workflow_steps") or []:
        calls = (step.get("details") or {}).get("model_calls")
        if calls is not None:
            n += max(0, calls - expected_calls(step))
    m = re.search(r"after (\d+) attempts", error_text(response.get("error")))
    if m:
        n += int(m.group(1)) - 1
    return n


def error_text(error):
    """The response's `error` ({node, class, message, hint}) as "node (class): message"."""
    if not error:
        return ""
    if isinstance(error, dict):
        return f"{error.get('node')} ({error.get('class')}): {error.get('message')}"
    return str(error)


def load(out, name, mode):
    """The response and the number of streamed characters (None for plain runs)."""
    path = os.path.join(out, name + ".out")
    try:
        text = open(path, encoding="utf-8", errors="replace").read()
    except OSError:
        return None, None
    if mode != "stream":
        try:
            return json.loads(text), None
        except ValueError:
            return None, None
    streamed, final = 0, None
    for line in text.splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if ev.get("event") == "token":
            streamed += len((ev.get("data") or {}).get("text") or "")
        elif ev.get("event") == "discarded":
            pass
        elif ev.get("event") == "final":
            final = ev.get("data")
    return final, streamed


def short(text, width):
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--ctx", type=int)
    p.add_argument("--slots", type=int)
    p.add_argument("--script-seconds", type=int)
    p.add_argument("--model")
    p.add_argument("--build-seconds-file")
    a = p.parse_args()

    rows = []
    with open(os.path.join(a.out, "runs.tsv"), encoding="utf-8") as f:
        for line in f:
            name, mode, code, wall, question, set_name, *rest = line.rstrip("\n").split("\t")
            requests = int(rest[0]) if rest and rest[0] else None
            resp, streamed = load(a.out, name, mode)
            if resp is not None:
                with open(os.path.join(a.out, name + ".json"), "w", encoding="utf-8") as o:
                    json.dump(resp, o, indent=2)
            err = ""
            if resp is None:
                stderr = open(os.path.join(a.out, name + ".err"), encoding="utf-8", errors="replace").read()
                err = short(stderr.strip().splitlines()[-1] if stderr.strip() else "no output", 300)
            else:
                err = error_text(resp.get("error"))
            md = (resp or {}).get("metadata") or {}
            rows.append({
                "name": name,
                "set": set_name,
                "question": question,
                "mode": mode,
                "exit": int(code),
                "status": (resp or {}).get("status", "no-json"),
                "limits_hit": md.get("limits_hit", []),
                "answer_chars": len((resp or {}).get("answer") or ""),
                "model_calls": md.get("model_calls"),
                "reasks": reasks(resp) if resp else None,
                "infra_retries": md.get("infrastructure_retries"),
                "server_requests": requests,
                "streamed_chars": streamed,
                "tokens": (md.get("tokens") or {}).get("total"),
                "wall_s": float(wall),
                "route": md.get("route"),
                "error": err,
                "answer_start": short((resp or {}).get("answer") or "", 24),
            })

    def cell(v):
        return "-" if v is None else str(v)

    head = ["question", "mode", "route", "status", "limits_hit", "ans", "calls", "reask", "retry", "srv", "strm", "wall_s", "answer starts"]
    table = [head]
    for r in rows:
        table.append([
            short(r["question"], 44), r["mode"], {"kg_retrieval": "kg", "web_search": "web",
            "llm_internal": "llm"}.get(r["route"], cell(r["route"])), r["status"], ",".join(r["limits_hit"]) or "-",
            cell(r["answer_chars"]), cell(r["model_calls"]), cell(r["reasks"]), cell(r["infra_retries"]),
            cell(r["server_requests"]), cell(r["streamed_chars"]), f"{r['wall_s']:.1f}",
            json.dumps(r["answer_start"], ensure_ascii=False),
        ])
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    print(f"Real-model tier: CTX={a.ctx} per slot, {a.slots} slot(s)")
    for k, row in enumerate(table):
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
        if k == 0:
            print("  ".join("-" * w for w in widths))
    print("(route = route_question's decision: kg / web / llm; ans = answer chars; calls = metadata.model_calls; reask = re-asks of malformed replies;"
          " retry = metadata.infrastructure_retries; srv = completion tasks the server started;"
          " strm = chars of streamed token events, every attempt)")

    statuses = collections.Counter(r["status"] for r in rows)
    answered = statuses["completed"] + statuses["best_effort"]
    nonempty = sum(1 for r in rows if r["answer_chars"] > 0)
    limits = collections.Counter(l for r in rows for l in r["limits_hit"])
    errors = collections.Counter(re.sub(r"\d+", "N", r["error"])[:200] for r in rows if r["error"])
    print()
    print(f"runs: {len(rows)}; answered (completed/best_effort): {answered} "
          f"({statuses['completed']}/{statuses['best_effort']}); failed: {statuses['failed']}; "
          f"other: {len(rows) - answered - statuses['failed']}; non-empty answers: {nonempty}")
    print("statuses: " + (", ".join(f"{k} {v}" for k, v in sorted(statuses.items())) or "-"))
    routes = collections.Counter(r["route"] or "none" for r in rows)
    print("routes: " + ", ".join(f"{k} {v}" for k, v in sorted(routes.items())))
    print("limits hit: " + (", ".join(f"{k} {v}" for k, v in sorted(limits.items())) or "none"))
    print(f"wall time of the runs: {sum(r['wall_s'] for r in rows):.0f} s")
    if errors:
        print("errors (digits as N):")
        for e, n in errors.most_common():
            print(f"  {n} x {e}")
    facts = {}
    if a.model and os.path.isfile(a.model):
        facts["model_bytes"] = os.path.getsize(a.model)
        print(f"model: {os.path.basename(a.model)}, {facts['model_bytes']:,} bytes")
    if a.build_seconds_file and os.path.isfile(a.build_seconds_file):
        facts["build_seconds"] = int(open(a.build_seconds_file).read().strip())
        print(f"llama-server build (one time): {facts['build_seconds']} s")
    if a.script_seconds is not None:
        facts["script_seconds"] = a.script_seconds
        print(f"this script: {a.script_seconds} s")
    with open(os.path.join(a.out, "summary.json"), "w", encoding="utf-8") as o:
        json.dump({"ctx": a.ctx, "slots": a.slots, "rows": rows, **facts}, o, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
