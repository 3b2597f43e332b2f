#!/usr/bin/env python3
"""What an embedding model can reach on a labelled set, from a bundle's own vectors alone.

Each page is ranked by its best passage's cosine to the question (the query embedded by the
same OpenAI-compatible server the eval uses); prints the share of questions whose expected page
is in the top 1, 5, 10, 20 and 50 pages. No BM25, no fusion, no grading: the ceiling that
fusion and the workflow start from (BENCHMARKS.md "A second embedding model, and the RRF
constant").

Usage: eval/vector_ceiling.py BUNDLE QUESTIONS.jsonl EMBEDDINGS_BASE_URL MODEL [SHARE]
  e.g. .local/eval-venv/bin/python eval/vector_ceiling.py .local/eval-runs-hybrid/man.bundle \
       eval/man.jsonl http://127.0.0.1:18732/v1 multilingual-e5-small-q4
SHARE (default 0): the hubness correction of src/search/hybrid/hubness.rs, the share of the
query's component along the corpus's common direction removed before ranking (the store
uses 0.25).
Needs numpy (the eval venv of scripts/setup-eval-tools.sh has it) and a bundle whose vectors
are int8 (`vectors.bin`: per passage, its dimensions as int8 then a 4-byte scale).
"""
import json
import sys
import urllib.request

import numpy as np

TOPS = (1, 5, 10, 20, 50)


def vectors(bundle):
    manifest = json.load(open(f"{bundle}/kb-manifest.json"))
    pages = [d["path"] for d in manifest["documents"] for _ in range(d["passages"])]
    dims = manifest["embedding"]["dimensions"]
    raw = open(f"{bundle}/vectors.bin", "rb").read()
    n = len(pages)
    if len(raw) < n * dims:
        sys.exit(f"{bundle}/vectors.bin holds fewer than {n} vectors of {dims} dimensions")
    v = np.frombuffer(raw[: n * dims], dtype=np.int8).reshape(n, dims).astype(np.float32)
    return pages, v / np.linalg.norm(v, axis=1, keepdims=True)


def embed(url, model, texts):
    body = json.dumps({"model": model, "input": texts}).encode()
    request = urllib.request.Request(
        url.rstrip("/") + "/embeddings", body, {"content-type": "application/json"}
    )
    data = json.loads(urllib.request.urlopen(request, timeout=900).read())["data"]
    q = np.array([d["embedding"] for d in sorted(data, key=lambda d: d["index"])], np.float32)
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def main():
    if len(sys.argv) not in (5, 6):
        sys.exit(__doc__)
    bundle, questions, url, model = sys.argv[1:5]
    share = float(sys.argv[5]) if len(sys.argv) == 6 else 0.0
    pages, v = vectors(bundle)
    qs = [json.loads(line) for line in open(questions) if line.strip()]
    q = embed(url, model, [x["question"] for x in qs])
    common = v.mean(axis=0)
    common /= np.linalg.norm(common)
    q = q - share * np.outer(q @ common, common)
    hits = dict.fromkeys(TOPS, 0)
    for i, question in enumerate(qs):
        scores = v @ q[i]
        ranked = list(dict.fromkeys(pages[j] for j in np.argsort(-scores)))
        expected = set(question["expected_sources"])
        rank = next((r for r, page in enumerate(ranked) if page in expected), len(ranked))
        for top in TOPS:
            hits[top] += rank < top
    print(" ".join(f"top{top} {hits[top] / len(qs):.3f}" for top in TOPS))


if __name__ == "__main__":
    main()
