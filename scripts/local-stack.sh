#!/usr/bin/env bash
# Runs bounded-rag locally, offline, with one command:
#
#   scripts/local-stack.sh                # moto + provisioning + `cargo lambda watch` (Ctrl-C stops all)
#   scripts/local-stack.sh --no-watch     # moto + provisioning only; moto keeps running in the background
#   scripts/local-stack.sh --stop         # stops the background moto started by --no-watch
#   scripts/local-stack.sh -- --release   # anything after -- goes to `cargo lambda watch`
#
# Steps:
#   1. scripts/setup-test-tools.sh        moto_server and cargo-lambda into .local/venv (PyPI, once)
#   2. moto_server on 127.0.0.1:$MOTO_PORT (DynamoDB, SQS, Secrets Manager, S3 wire APIs), log .local/moto.log
#   3. infra/local/provision.py           checkpoint table, work queue + DLQ, secret bounded-rag/api-keys,
#                                         bucket bounded-rag-kb
#   4. $LAMBDA_ENV_FILE                   AWS_ENDPOINT_URL, dummy credentials, CHECKPOINT_TABLE,
#                                         WORK_QUEUE_URL, SECRETS_ID, KB_URI, LLM_PROVIDER=offline,
#                                         and every setting of docs/src/configuration.md that
#                                         is set in this shell (MAX_TOKENS_PER_RUN, RUN_TIMEOUT_MS, ...)
#      then the sample knowledge base: `bounded-rag ingest kb` and `bounded-rag kb publish` to
#      KB_URI on moto's S3, so the functions load their knowledge from S3 exactly as on AWS
#   5. cargo lambda watch -A 127.0.0.1 -P $LAMBDA_PORT --env-file $LAMBDA_ENV_FILE   (foreground)
#      plus infra/local/sqs_pump.py, which feeds the work queue to the `worker` function the way
#      Lambda's SQS event source would (watch emulates Lambda, not event source mappings), with
#      the worker's Timeout from template.yaml as its invocation timeout, and invokes the
#      `sweeper` function every $SWEEP_EVERY seconds like the EventBridge schedule.
#
# Environment (all optional):
#   MOTO_PORT=5000  LAMBDA_PORT=9000  LAMBDA_ENV_FILE=.local/lambda.env  SWEEP_EVERY=60 (0 = off)
#   LLM_PROVIDER=offline   (openai: also set LLM_BASE_URL / LLM_MODEL; LLM_API_KEY goes into the
#                           secret, never into the env file)
#   WEB_SEARCH_BASE_URL, WEB_SEARCH_API_KEY (the key goes into the secret)
#   EMBEDDINGS_BASE_URL, EMBEDDINGS_MODEL, EMBEDDINGS_API_KEY (hybrid retrieval: the sample is
#                           ingested with them; the key goes into the secret)
#   KB_SOURCE=kb            the folder published as the knowledge base
#   any other documented setting (docs/src/configuration.md) is passed to the functions as set
#
# Nothing listens on anything but 127.0.0.1 and nothing talks to AWS: the credentials are dummies.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

VENV="$ROOT/.local/venv"
MOTO_PORT="${MOTO_PORT:-5000}"
LAMBDA_PORT="${LAMBDA_PORT:-9000}"
SWEEP_EVERY="${SWEEP_EVERY:-60}"
LAMBDA_ENV_FILE="${LAMBDA_ENV_FILE:-$ROOT/.local/lambda.env}"
MOTO_LOG="$ROOT/.local/moto.log"
MOTO_PIDFILE="$ROOT/.local/moto.pid"
ENDPOINT="http://127.0.0.1:$MOTO_PORT"

usage() { sed -n '2,36p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

watch=1
stop=0
watch_args=()
while (($#)); do
    case "$1" in
    --no-watch) watch=0 ;;
    --stop) stop=1 ;;
    -h | --help) usage; exit 0 ;;
    --) shift; watch_args=("$@"); break ;;
    *) echo "local-stack: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done

log() { echo "local-stack: $*" >&2; }

# The pid in .local/moto.pid, if that process is still a moto_server.
background_moto_pid() {
    local pid
    [[ -f "$MOTO_PIDFILE" ]] || return 1
    pid="$(cat "$MOTO_PIDFILE")"
    [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null && grep -q moto_server "/proc/$pid/cmdline" 2>/dev/null &&
        echo "$pid"
}

if ((stop)); then
    if pid="$(background_moto_pid)"; then
        kill "$pid" && log "stopped moto_server (pid $pid)"
    else
        log "no background moto_server running"
    fi
    rm -f "$MOTO_PIDFILE"
    exit 0
fi

# 1. tools
"$ROOT/scripts/setup-test-tools.sh" >/dev/null
export PATH="$VENV/bin:$PATH" # `cargo lambda` finds cargo-lambda here
PY="$VENV/bin/python"

moto_answers() {
    "$PY" - "$ENDPOINT" <<'EOF' 2>/dev/null
import sys, urllib.request
urllib.request.urlopen(sys.argv[1] + "/moto-api/", timeout=1).read()
EOF
}

port_busy() {
    "$PY" - "$1" <<'EOF'
import socket, sys
s = socket.socket()
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(0)
sys.exit(1)
EOF
}

started_pids=()
cleanup() {
    local pid
    for pid in "${started_pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${started_pids[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
}

# 2. moto
if moto_answers; then
    log "reusing the moto server already answering on $ENDPOINT"
else
    if port_busy "$MOTO_PORT"; then
        log "port $MOTO_PORT is taken by something that is not moto; set MOTO_PORT"
        exit 1
    fi
    if ((watch)); then
        "$VENV/bin/moto_server" -H 127.0.0.1 -p "$MOTO_PORT" >"$MOTO_LOG" 2>&1 &
        started_pids+=($!)
        trap cleanup EXIT
        trap 'exit 130' INT
        trap 'exit 143' TERM
    else
        # Detached (own session) so it outlives this script; --stop ends it.
        setsid "$VENV/bin/moto_server" -H 127.0.0.1 -p "$MOTO_PORT" >"$MOTO_LOG" 2>&1 </dev/null &
        echo $! >"$MOTO_PIDFILE"
    fi
    for _ in $(seq 1 300); do
        moto_answers && break
        sleep 0.1
    done
    if ! moto_answers; then
        log "moto_server did not answer on $ENDPOINT within 30 s; last lines of $MOTO_LOG:"
        tail -n 20 "$MOTO_LOG" >&2 || true
        exit 1
    fi
    log "moto_server on $ENDPOINT (log $MOTO_LOG)"
fi

# 3 + 4. resources and env file
"$PY" "$ROOT/infra/local/provision.py" --endpoint "$ENDPOINT" --env-file "$LAMBDA_ENV_FILE" >&2
QUEUE_URL="$(sed -n "s/^WORK_QUEUE_URL='\(.*\)'$/\1/p" "$LAMBDA_ENV_FILE")"
KB_URI="$(sed -n "s/^KB_URI='\(.*\)'$/\1/p" "$LAMBDA_ENV_FILE")"

# The knowledge base: ingested and published to moto's S3 the way `kb publish` does on AWS.
KB_SOURCE="${KB_SOURCE:-kb}"
KB_BUNDLE="$ROOT/.local/kb-bundle"
log "publishing $KB_SOURCE/ to $KB_URI"
(
    export AWS_ENDPOINT_URL="$ENDPOINT" AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=testing \
        AWS_SECRET_ACCESS_KEY=testing AWS_EC2_METADATA_DISABLED=true
    unset AWS_PROFILE AWS_SESSION_TOKEN SECRETS_ID
    cargo run --quiet --bin bounded-rag -- -q ingest "$KB_SOURCE" --out "$KB_BUNDLE" >&2
    cargo run --quiet --bin bounded-rag -- -q kb publish "$KB_BUNDLE" "$KB_URI" >&2
)

INVOKE="http://127.0.0.1:$LAMBDA_PORT"
cat >&2 <<EOF

  Lambda emulator: $INVOKE   (functions: api, worker, stream, sweeper; env from ${LAMBDA_ENV_FILE#"$ROOT"/})

  # invoke with a sample API Gateway v2 event (note -A: watch listens on IPv4 loopback only)
  .local/venv/bin/cargo-lambda lambda invoke api -A 127.0.0.1 -P $LAMBDA_PORT --data-file events/apigw-run.json
  # or through the function URL emulation (no auth: every such request is the one anonymous
  # caller; the events in events/ carry an IAM principal or a JWT sub, so their runs are not its)
  curl -s -X POST $INVOKE/lambda-url/api/workflow/run -H 'content-type: application/json' \\
       -d '{"question":"What causes patch canker in durian?"}'
  curl -s -X POST $INVOKE/lambda-url/api/workflow/runs -H 'content-type: application/json' \\
       -d '{"question":"What causes patch canker in durian?"}'
  curl -s $INVOKE/lambda-url/api/workflow/runs/<run_id>
  # the raw invoke API (any event JSON)
  curl -s -X POST $INVOKE/2015-03-31/functions/api/invocations --data @events/apigw-runs-get.json

EOF

if ((!watch)); then
    cat >&2 <<EOF
  Not starting the emulator (--no-watch). Start it yourself with:
  PATH="$VENV/bin:\$PATH" cargo lambda watch -A 127.0.0.1 -P $LAMBDA_PORT --env-file ${LAMBDA_ENV_FILE#"$ROOT"/}
  Stop moto with: scripts/local-stack.sh --stop
EOF
    exit 0
fi

if port_busy "$LAMBDA_PORT"; then
    log "port $LAMBDA_PORT is taken; set LAMBDA_PORT"
    exit 1
fi

# 5. SQS -> worker, then the emulator in the foreground.
if [[ -n "$QUEUE_URL" ]]; then
    "$PY" "$ROOT/infra/local/sqs_pump.py" --endpoint "$ENDPOINT" --queue-url "$QUEUE_URL" \
        --invoke "$INVOKE" --sweep-every "$SWEEP_EVERY" &
    started_pids+=($!)
    trap cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
fi
# The keys are in the secret now; the functions must read them from there, not from this shell.
# A developer profile must not take over from the dummy credentials of the env file either.
unset LLM_API_KEY WEB_SEARCH_API_KEY AWS_PROFILE AWS_SESSION_TOKEN
log "starting cargo lambda watch on $INVOKE (Ctrl-C stops everything)"
cargo lambda watch -A 127.0.0.1 -P "$LAMBDA_PORT" --env-file "$LAMBDA_ENV_FILE" "${watch_args[@]}" &
started_pids+=($!)
wait "${started_pids[-1]}"
