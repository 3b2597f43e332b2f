#!/usr/bin/env sh
# The same questions over the same documents in plain text and converted by a real tool
# (eval/build_format_pairs.py): ingests both sides of every pair, evaluates them offline with
# `eval --mode quality`, and prints one summary line per side plus the ingest time.
# Usage: eval/run_formats.sh [BIN] [OUTDIR]  (BIN default target/debug/bounded-rag; OUTDIR
# default .local/eval-formats). SETS (default python) and PAIRS (default "rst docx pdf") choose.
set -eu
ROOT=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
BIN=${1:-$ROOT/target/debug/bounded-rag}
OUT=${2:-$ROOT/.local/eval-formats}
CORPORA=${CORPORA:-$ROOT/.local/eval-corpora}
[ -d "$CORPORA/python" ] || python3 "$ROOT/eval/build_corpora.py" "$CORPORA" >/dev/null
python3 "$ROOT/eval/build_format_pairs.py" "$CORPORA" "$OUT"
for set in ${SETS:-python}; do
    for pair in ${PAIRS:-rst docx pdf}; do
        [ -d "$OUT/$set/$pair" ] || continue
        for side in $(cd "$OUT/$set/$pair" && ls -d */ | tr -d /); do
            corpus="$OUT/$set/$pair/$side"
            bundle="$OUT/$set/$pair/$side.bundle"
            rm -rf "$bundle"
            start=$(date +%s.%N)
            "$BIN" ingest "$corpus" --out "$bundle" >"$bundle.ingest.log" 2>&1
            end=$(date +%s.%N)
            bytes=$(du -sb "$corpus" | cut -f1)
            RUST_LOG=${RUST_LOG:-error} KB_PATH="$bundle" LLM_PROVIDER=offline "$BIN" eval \
                "$OUT/$set/$pair/$set.$side.jsonl" ${EVAL_FLAGS:---mode quality} --json >"$bundle.json"
            printf '%s %s %s: ' "$set" "$pair" "$side"
            python3 "$ROOT/eval/summarize.py" "$bundle.json" "$OUT/$set/$pair/$set.$side.jsonl"
            python3 -c "import sys; s, e, b = map(float, sys.argv[1:]); print(f'  ingest {e - s:.2f} s, {b / 1e6:.1f} MB, {b / 1e6 / (e - s):.2f} MB/s')" "$start" "$end" "$bytes"
        done
    done
done
