#!/usr/bin/env bash
# The benchmark suite: one command, one table (see BENCHMARKS.md).
#
#   scripts/bench.sh            # measure everything, print the table on stdout
#   scripts/bench.sh --write    # ... and rewrite the generated section of BENCHMARKS.md
#   scripts/bench.sh --quick    # fewer repetitions (checks the suite, not for publishing)
#
# What it does, in order (progress on stderr, the table alone on stdout):
#   1. installs moto's server and cargo-lambda (with zig) into .local/venv
#      (scripts/setup-test-tools.sh), and LangGraph + langchain-openai for the Python reference
#      into .local/venv-bench (bench/python/requirements.txt; if that fails, the documented
#      Python figures are used and the table says so);
#   2. builds the release binaries (bounded-rag, api, worker: LTO, the profile that ships);
#   3. tries scripts/build-lambda.sh (`cargo lambda build --release --arm64`, installing the
#      aarch64 target and zig) for the arm64 bootstraps; when that fails the table says so and
#      reports the x86_64 binary sizes as a proxy;
#   4. runs the criterion engine bench (benches/engine.rs);
#   5. runs benches/suite: cold starts, peak RSS, end-to-end runs against a scripted
#      OpenAI-compatible server (0 ms and 50 ms per reply), an SQS batch of 10, checkpoints on
#      moto's DynamoDB, the Python reference; then, with the server at 300 ms per reply, the
#      release CLI's full-quality happy path, its first streamed answer token (ask --stream),
#      a repeated question with the response cache on (LLM_CACHE_TTL_SECONDS; model calls
#      counted at the server), and the Python reference's run; then prints the table.
# Then, as a step of its own (after the table, so it can never cost the rest), the load test:
# 1,000 asynchronous runs through scripts/local-stack.sh with the release functions against a
# 50 ms scripted model (bench/load/local_stack_load.py); it prints its own table and, with
# --write, rewrites its own section of BENCHMARKS.md. --quick runs 200. A failed load test
# makes the script exit non-zero after everything else ran.
#
# Needs: a Rust toolchain, python3 with venv, a reachable PyPI on the first run. Everything
# listens on 127.0.0.1 only. The first run compiles with LTO and takes a while (~20 min on 2
# cores); later runs reuse the build.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

suite_args=()
for arg in "$@"; do
    case $arg in
        --write | --quick) suite_args+=("$arg") ;;
        -h | --help)
            sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "bench.sh: unknown argument $arg (try --help)" >&2
            exit 2
            ;;
    esac
done

log() { printf 'bench.sh: %s\n' "$*" >&2; }

TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
mkdir -p "$TARGET_DIR"

log "1/5 tools: moto, cargo-lambda, Python reference"
scripts/setup-test-tools.sh >&2
PY_VENV="$ROOT/.local/venv-bench"
PY_ARGS=()
if { [ -x "$PY_VENV/bin/python" ] || python3 -m venv "$PY_VENV" >&2; } &&
    "$PY_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
        -r bench/python/requirements.txt >&2; then
    PY_ARGS=(--python "$PY_VENV/bin/python")
else
    log "could not install the Python reference; the table will use DESIGN.md's documented figures"
fi

log "2/5 release build of bounded-rag, api, worker"
cargo build --release --locked --bins >&2

log "3/5 arm64 bootstraps: scripts/build-lambda.sh (cargo lambda build --release --arm64)"
ARM64_LOG="$TARGET_DIR/bench-arm64.log"
ARM64_STATUS="$TARGET_DIR/bench-arm64.status"
if scripts/build-lambda.sh --locked >"$ARM64_LOG" 2>&1; then
    echo ok >"$ARM64_STATUS"
else
    log "arm64 build failed (last lines below); the table reports x86_64 sizes as a proxy"
    tail -n 5 "$ARM64_LOG" >&2
    { echo failed; grep -v '^\s*$' "$ARM64_LOG" | tail -n 5; } >"$ARM64_STATUS"
fi

log "4/5 engine overhead per step (criterion)"
cargo bench --locked --bench engine >&2

log "5/5 cold starts, end-to-end, batch, checkpoints, Python reference, latency at 300 ms"
TABLE="$TARGET_DIR/bench-table.md"
rm -f "$TABLE"
# The worker prints EMF metric lines on stdout: keep them on stderr, print the table alone.
cargo bench --locked --bench suite -- --arm64-log "$ARM64_STATUS" --out "$TABLE" \
    "${PY_ARGS[@]}" "${suite_args[@]}" >&2
cat "$TABLE"

# --- knowledge base at scale: benches/kb (BENCHMARKS.md, "Knowledge base at 100,000 passages") ---
# A generated corpus of 100,000 passages with 384-dimension vectors: ingest, bundle size, cold
# load from moto's S3, BM25 and hybrid query latency, the release `api` function's peak RSS.
log "kb: 100,000 passages (ingest, S3 cold load, BM25/hybrid p50/p99, api peak RSS)"
KB_TABLE="$TARGET_DIR/bench-kb-table.md"
rm -f "$KB_TABLE"
MOTO_SERVER_BIN=${MOTO_SERVER_BIN:-$ROOT/.local/venv/bin/moto_server} \
    cargo bench --locked --bench kb -- --api "$TARGET_DIR/release/api" --out "$KB_TABLE" >&2
echo
cat "$KB_TABLE"
# --- end of the knowledge-base step ---

# ---------------------------------------------------------------------------------------------
# Load test: its own step, its own file (bench/load/local_stack_load.py), its own section of
# BENCHMARKS.md. Nothing above depends on it.
load_args=(--release)
for arg in "$@"; do
    case $arg in
        --write) load_args+=(--write) ;;
        --quick) load_args+=(--runs 200) ;;
    esac
done
log "load test: asynchronous runs through the local stack (bench/load/local_stack_load.py)"
if ! "$ROOT/.local/venv/bin/python" bench/load/local_stack_load.py "${load_args[@]}"; then
    log "load test FAILED (the table above is unaffected)"
    exit 1
fi
