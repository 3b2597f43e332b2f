#!/usr/bin/env bash
# Fuzzes the HTTP API from openapi.yaml with schemathesis, against the local stack: moto
# (DynamoDB, SQS, Secrets Manager, provisioned by infra/local/provision.py), `cargo lambda watch`
# (the Lambda Runtime API and function URL emulator) serving the `api` and `worker` binaries
# that `cargo test` just built, and infra/local/sqs_pump.py feeding the queue to the worker.
# Requests go through the function URL emulation without auth: the anonymous caller.
#
#   scripts/api-fuzz.sh              # run by scripts/test.sh after `cargo test`
#
# Then the same contract against `bounded-rag serve` (its local stores, the offline model, its
# in-process worker), with the fixed seed and fewer cases: serve answers through the same
# handlers, so it must answer exactly as the functions do.
#
# Passes when schemathesis finds no server error (5xx), no answer outside openapi.yaml (status
# code, content type, headers, body schema, `Allow` of a 405) and no request outside it that is
# accepted (`negative_data_rejection`: a body, parameter or header the contract refuses must be
# refused, as `filters: null` once was not). Every check runs but `positive_data_acceptance`,
# which reads each documented 400 or 422 of a valid-looking request as a failure: a cursor this
# API never gave out, or an `Idempotency-Key` reused with another body. The run is bounded: a
# fixed seed, a fixed number of generated cases per operation, one worker, and a time limit on
# the whole run. Every process started here is stopped on exit, success or not. Logs and the
# JUnit report stay in .local/api-fuzz/.
#
# Environment (all optional):
#   API_FUZZ_MAX_EXAMPLES=100  cases per operation in the fuzzing phase
#   API_FUZZ_SEED=20251124     the fixed schemathesis seed
#   API_FUZZ_RANDOM_SEEDS=1    how many runs with a fresh random seed follow the fixed one (each
#                              seed is printed, so a failure reruns with API_FUZZ_SEED=that seed
#                              API_FUZZ_RANDOM_SEEDS=0)
#   API_FUZZ_TIME_LIMIT=300    seconds before schemathesis is stopped (a failure)
#   API_FUZZ_ACTIVE_RUNS=4     MAX_ACTIVE_RUNS_PER_CALLER of the functions, so 429 is exercised
#   API_FUZZ_SERVE_MAX_EXAMPLES=25  cases per operation against `bounded-rag serve` (0: skip it)
#   MOTO_SERVER_BIN, CARGO_LAMBDA_BIN   tools other than those in .local/venv
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

VENV="$ROOT/.local/venv"
PY="$VENV/bin/python"
MOTO="${MOTO_SERVER_BIN:-$VENV/bin/moto_server}"
CARGO_LAMBDA="${CARGO_LAMBDA_BIN:-$VENV/bin/cargo-lambda}"
SCHEMATHESIS="$VENV/bin/schemathesis"
MAX_EXAMPLES="${API_FUZZ_MAX_EXAMPLES:-100}"
SEED="${API_FUZZ_SEED:-20251124}"
RANDOM_SEEDS="${API_FUZZ_RANDOM_SEEDS:-1}"
TIME_LIMIT="${API_FUZZ_TIME_LIMIT:-300}"
ACTIVE_RUNS="${API_FUZZ_ACTIVE_RUNS:-4}"
SERVE_MAX_EXAMPLES="${API_FUZZ_SERVE_MAX_EXAMPLES:-25}"
OUT="$ROOT/.local/api-fuzz"

log() { echo "api-fuzz: $*" >&2; }

for tool in "$PY" "$MOTO" "$CARGO_LAMBDA" "$SCHEMATHESIS"; do
    if [[ ! -x "$tool" ]]; then
        log "$tool is missing: run scripts/setup-test-tools.sh"
        exit 1
    fi
done

rm -rf "$OUT"
mkdir -p "$OUT"

# Process groups started here (each process runs in a session of its own, so stopping its
# group stops everything it started and nothing else).
started=()
cleanup() {
    local status=$? pid
    for pid in "${started[@]}"; do
        kill -TERM -- "-$pid" 2>/dev/null || true
    done
    for pid in "${started[@]}"; do
        for _ in $(seq 1 50); do
            kill -0 -- "-$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL -- "-$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    if ((status != 0)); then
        log "failed; logs in ${OUT#"$ROOT"/}/"
        for f in "$OUT"/*.log; do
            [[ -s "$f" ]] || continue
            echo "--- last lines of ${f#"$ROOT"/} ---" >&2
            tail -n 15 "$f" >&2
        done
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Starts "$@" in a new session with output to $OUT/$name.log; records its pid (= its group).
spawn() {
    local name="$1"
    shift
    setsid "$@" </dev/null >"$OUT/$name.log" 2>&1 &
    started+=($!)
}

# Polls until something listens on 127.0.0.1:`port` or `seconds` pass.
wait_port() {
    "$PY" - "$1" "$2" <<'EOF'
import socket, sys, time
port, limit = int(sys.argv[1]), float(sys.argv[2])
end = time.monotonic() + limit
while time.monotonic() < end:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.2)
sys.exit(1)
EOF
}

free_port() {
    "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Polls until `url` answers (any HTTP status) or `seconds` pass.
wait_http() {
    "$PY" - "$1" "$2" <<'EOF'
import sys, time, urllib.error, urllib.request
url, limit = sys.argv[1], float(sys.argv[2])
end = time.monotonic() + limit
while time.monotonic() < end:
    try:
        urllib.request.urlopen(url, timeout=2).read()
        sys.exit(0)
    except urllib.error.HTTPError:
        sys.exit(0)
    except Exception:
        time.sleep(0.2)
sys.exit(1)
EOF
}

# 1. The function binaries of this tree (a no-op right after `cargo test`).
cargo build --quiet --locked --all-features --bin api --bin worker --bin bounded-rag
BIN_DIR="$(cargo metadata --format-version 1 --no-deps | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')/debug"

# 2. moto, provisioned like AWS.
MOTO_PORT="$(free_port)"
ENDPOINT="http://127.0.0.1:$MOTO_PORT"
spawn moto "$MOTO" -H 127.0.0.1 -p "$MOTO_PORT"
wait_http "$ENDPOINT/moto-api/" 30 || { log "moto_server did not start"; exit 1; }
ENV_FILE="$OUT/lambda.env"
LLM_PROVIDER=offline "$PY" infra/local/provision.py --endpoint "$ENDPOINT" --env-file "$ENV_FILE" >"$OUT/provision.log"
QUEUE_URL="$(sed -n "s/^WORK_QUEUE_URL='\(.*\)'$/\1/p" "$ENV_FILE")"
# The functions load their knowledge from S3 (KB_URI), as in the local stack: publish the sample.
KB_URI="$(sed -n "s/^KB_URI='\(.*\)'$/\1/p" "$ENV_FILE")"
(
    export AWS_ENDPOINT_URL="$ENDPOINT" AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=testing \
        AWS_SECRET_ACCESS_KEY=testing AWS_EC2_METADATA_DISABLED=true
    unset AWS_PROFILE AWS_SESSION_TOKEN SECRETS_ID
    "$BIN_DIR/bounded-rag" -q ingest "$ROOT/kb" --out "$OUT/kb-bundle" >"$OUT/kb-publish.log"
    "$BIN_DIR/bounded-rag" -q kb publish "$OUT/kb-bundle" "$KB_URI" >>"$OUT/kb-publish.log"
)

# 3. The emulator, and the prebuilt functions on its Runtime API.
LAMBDA_PORT="$(free_port)"
ADDR="127.0.0.1:$LAMBDA_PORT"
spawn watch env NO_COLOR=1 "$CARGO_LAMBDA" lambda watch --only-lambda-apis \
    --invoke-address 127.0.0.1 --invoke-port "$LAMBDA_PORT"
# (Only a port check: an HTTP request would wait for a function that is not started yet.)
wait_port "$LAMBDA_PORT" 60 || { log "cargo lambda watch did not start"; exit 1; }
for function in api worker; do
    # Only the env file's variables (no developer settings leak in), as on Lambda.
    spawn "$function" env -i PATH="$PATH" HOME="$HOME" \
        AWS_LAMBDA_RUNTIME_API="http://$ADDR/.rt/$function" AWS_LAMBDA_FUNCTION_NAME="$function" \
        AWS_LAMBDA_FUNCTION_VERSION=1 AWS_LAMBDA_FUNCTION_MEMORY_SIZE=128 \
        MAX_ACTIVE_RUNS_PER_CALLER="$ACTIVE_RUNS" \
        bash -c 'set -a; . "$1"; set +a; exec "$2"' function-env "$ENV_FILE" "$BIN_DIR/$function"
done
spawn sqs_pump "$PY" infra/local/sqs_pump.py --endpoint "$ENDPOINT" --queue-url "$QUEUE_URL" \
    --invoke "http://$ADDR"
BASE="http://$ADDR/lambda-url/api"
wait_http "$BASE/workflow/runs/ready" 60 || { log "the api function did not answer"; exit 1; }

# 4. schemathesis, bounded: the fixed seed, then RANDOM_SEEDS fresh ones.
# Run from $OUT: schemathesis and hypothesis keep their caches (.schemathesis/, .hypothesis/)
# in the working directory.
cd "$OUT"
seeds=("$SEED")
for _ in $(seq 1 "$RANDOM_SEEDS"); do
    seeds+=("$("$PY" -c 'import random; print(random.SystemRandom().randrange(1, 2**31))')")
done
# One schemathesis run: fuzz NAME BASE_URL SEED MAX_EXAMPLES.
fuzz() {
    local name="$1" base="$2" seed="$3" examples="$4"
    log "schemathesis on $base ($name): seed $seed, $examples cases per operation, at most $TIME_LIMIT s"
    SCHEMATHESIS_HOOKS="$ROOT/scripts/api_fuzz_hooks.py" \
        timeout --kill-after=10 "$TIME_LIMIT" "$SCHEMATHESIS" run "$ROOT/openapi.yaml" \
        --url "$base" \
        --checks all \
        --exclude-checks positive_data_acceptance \
        --phases examples,coverage,fuzzing \
        --max-examples "$examples" \
        --seed "$seed" \
        --workers 1 \
        --request-timeout 60 \
        --generation-database none \
        --no-color \
        --output-sanitize false \
        --report junit --report-dir "$OUT/$name-seed-$seed" \
        2>&1 | tee "$OUT/schemathesis-$name-$seed.log"
}

for seed in "${seeds[@]}"; do
    fuzz stack "$BASE" "$seed" "$MAX_EXAMPLES" || {
        log "schemathesis failed with seed $seed: rerun it with API_FUZZ_SEED=$seed API_FUZZ_RANDOM_SEEDS=0 scripts/api-fuzz.sh"
        exit 1
    }
done

# 5. The same contract against `bounded-rag serve`: local file store, offline model, in-process
# worker, the same MAX_ACTIVE_RUNS_PER_CALLER; the fixed seed only.
if ((SERVE_MAX_EXAMPLES > 0)); then
    SERVE_PORT="$(free_port)"
    spawn serve env -i PATH="$PATH" HOME="$HOME" STATE_DIR="$OUT/serve-state" \
        MAX_ACTIVE_RUNS_PER_CALLER="$ACTIVE_RUNS" \
        "$BIN_DIR/bounded-rag" serve --port "$SERVE_PORT"
    wait_http "http://127.0.0.1:$SERVE_PORT/" 30 || { log "bounded-rag serve did not start"; exit 1; }
    fuzz serve "http://127.0.0.1:$SERVE_PORT" "$SEED" "$SERVE_MAX_EXAMPLES" || {
        log "schemathesis failed against bounded-rag serve: rerun it with API_FUZZ_RANDOM_SEEDS=0 scripts/api-fuzz.sh"
        exit 1
    }
fi
