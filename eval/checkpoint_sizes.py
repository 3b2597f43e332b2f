#!/usr/bin/env python3
"""Checkpoint sizes of real runs: every question of a labelled set asked with the offline
provider (`bounded-rag ask`, local state folder), then each stored checkpoint measured as the
DynamoDB store would keep it: the JSON body, and gzip-compressed when that is smaller (bodies
over 8 KB, `src/store/dynamodb/item.rs`), with and without the trail (the patches that let a run
be forked from any step). Prints p50 / p99 / largest per checkpoint and per step.

Usage: eval/checkpoint_sizes.py BIN KB_PATH QUESTIONS.jsonl [EXTRA_ASK_FLAGS...]
"""
import base64
import gzip
import json
import os
import subprocess
import sys
import tempfile


def stored(body: bytes) -> int:
    """Bytes the DynamoDB store writes for `body`."""
    if len(body) <= 8 * 1024:
        return len(body)
    return min(len(body), len(gzip.compress(body)))


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def main():
    binary, kb, questions, *flags = sys.argv[1:]
    state = tempfile.mkdtemp(prefix="ckpt-")
    env = dict(os.environ, STATE_DIR=state, KB_PATH=kb, LLM_PROVIDER="offline", RUST_LOG="error")
    for line in open(questions):
        line = line.strip()
        if line:
            q = json.loads(line)["question"]
            subprocess.run([binary, "ask", q, "--json", *flags], env=env, check=True,
                           stdout=subprocess.DEVNULL)
    rows = []
    for name in os.listdir(state):
        if not (name.startswith("run%23") and name.endswith(".json")):
            continue
        item = json.load(open(os.path.join(state, name)))
        body = base64.b64decode(item["body"])
        cp = json.loads(body)
        steps = max(1, len(cp.get("records", [])))
        cp.pop("trail", None)
        without = json.dumps(cp, separators=(",", ":")).encode()
        rows.append((len(body), stored(body), len(without), stored(without), steps))
    print(f"{questions}: {len(rows)} runs")
    for label, i in [("JSON body, with trail", 0), ("stored (gzip > 8 KB), with trail", 1),
                     ("JSON body, without trail", 2), ("stored, without trail", 3)]:
        sizes = [r[i] for r in rows]
        per_step = [r[i] / r[4] for r in rows]
        print(f"  {label:34} p50 {pct(sizes, 50):>7,}  p99 {pct(sizes, 99):>7,}  largest {max(sizes):>7,}"
              f"   per step p50 {pct(per_step, 50):>6,.0f}  p99 {pct(per_step, 99):>6,.0f}")


if __name__ == "__main__":
    main()
