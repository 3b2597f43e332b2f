#!/usr/bin/env sh
# Ingests the real corpora built by eval/build_corpora.py and evaluates their question sets
# (SETS, default "crates python man").
# Usage: eval/run_real.sh [BIN] [OUTDIR]  (BIN default target/debug/bounded-rag;
# OUTDIR default .local/eval-runs). Extra eval flags go in EVAL_FLAGS (default --mode quality).
# With EMBEDDINGS_BASE_URL set, the bundles carry vectors and retrieval is hybrid.
# With STORE_URL_PREFIX set (e.g. postgres://USER:PASS@HOST:PORT/eval_), each set is ingested
# into that database plus the set's name (which must exist: createdb eval_crates eval_python eval_man)
# and evaluated from there (KB_URI) instead of a bundle.
set -eu
ROOT=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
BIN=${1:-$ROOT/target/debug/bounded-rag}
OUT=${2:-$ROOT/.local/eval-runs}
CORPORA=${CORPORA:-$ROOT/.local/eval-corpora}
mkdir -p "$OUT"
[ -d "$CORPORA/man" ] || python3 "$ROOT/eval/build_corpora.py" "$CORPORA" >/dev/null
for set in ${SETS:-crates python man}; do
    if [ -n "${STORE_URL_PREFIX:-}" ]; then
        store="KB_URI=$STORE_URL_PREFIX$set"
        "$BIN" ingest "$CORPORA/$set" --out "$STORE_URL_PREFIX$set" >"$OUT/$set.ingest.log" 2>&1
    else
        store="KB_PATH=$OUT/$set.bundle"
        rm -rf "$OUT/$set.bundle"
        "$BIN" ingest "$CORPORA/$set" --out "$OUT/$set.bundle" >"$OUT/$set.ingest.log" 2>&1
    fi
    # shellcheck disable=SC2086
    env RUST_LOG=${RUST_LOG:-error} "$store" LLM_PROVIDER=offline "$BIN" eval "$ROOT/eval/$set.jsonl" \
        ${EVAL_FLAGS:---mode quality} --json >"$OUT/$set.json"
    python3 "$ROOT/eval/summarize.py" "$OUT/$set.json" "$ROOT/eval/$set.jsonl"
done
