#!/usr/bin/env bash
# Arize Phoenix, a real LLM trace viewer, for the tests and for a developer's look at a run:
#
#   scripts/phoenix.sh install     # venv .local/venv-phoenix (once; ~1.5 min, ~850 MB)
#   scripts/phoenix.sh start DIR   # prints http://127.0.0.1:PORT (OTLP/HTTP at /v1/traces)
#   scripts/phoenix.sh stop DIR
#
# `start DIR`: a Phoenix server whose database is DIR/phoenix.db, on free loopback ports (HTTP;
# its gRPC receiver, unused here, binds a free port of its own), log in DIR/phoenix.log, no
# analytics and no request of its own to the internet. Exits 0 with the URL as its only line on
# stdout once `GET /readyz` answers 200 (about 25 s on 2 cores: most of it is Python importing
# the server); everything else goes to stderr. Starting a DIR whose server runs prints its URL
# again. Point the functions or the CLI at it with OTEL_EXPORTER_OTLP_ENDPOINT=<URL> (and
# OTEL_RESOURCE_ATTRIBUTES=openinference.project.name=NAME to pick its project), then open the
# URL in a browser.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.local/venv-phoenix"
# Pinned: the Phoenix the tests read spans back from changes only with this line.
REQUIREMENTS="arize-phoenix==20.26.1"

log() { echo "phoenix.sh: $*" >&2; }
die() { log "$*"; exit 1; }

install() {
    local stamp="$VENV/.requirements" python="${PYTHON:-python3}"
    if [[ -f "$stamp" && "$(cat "$stamp")" == "$REQUIREMENTS" ]]; then
        return 0
    fi
    mkdir -p "$ROOT/.local"
    exec 9>"$ROOT/.local/venv-phoenix.lock"
    flock 9
    if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$REQUIREMENTS" ]]; then
        log "installing $REQUIREMENTS into .local/venv-phoenix"
        [[ -x "$VENV/bin/python" ]] || "$python" -m venv "$VENV" ||
            die "'$python -m venv' failed (on Debian/Ubuntu: apt-get install python3-venv)"
        "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check $REQUIREMENTS ||
            die "pip install $REQUIREMENTS failed"
        echo "$REQUIREMENTS" >"$stamp"
    fi
    exec 9>&-
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

ready() {
    python3 - "$1" <<'EOF'
import sys, urllib.request
try:
    with urllib.request.urlopen(sys.argv[1] + "/readyz", timeout=2) as r:
        sys.exit(0 if r.status == 200 else 1)
except Exception:
    sys.exit(1)
EOF
}

start() {
    local dir="$1" url pid port grpc
    mkdir -p "$dir"
    exec 8>"$dir/.start.lock"
    flock 8
    if [[ -f "$dir/url" && -f "$dir/pid" ]] && kill -0 "$(cat "$dir/pid")" 2>/dev/null &&
        ready "$(cat "$dir/url")"; then
        cat "$dir/url"
        return 0
    fi
    install
    port="$(free_port)"
    grpc="$(free_port)"
    url="http://127.0.0.1:$port"
    PHOENIX_WORKING_DIR="$dir" PHOENIX_HOST=127.0.0.1 PHOENIX_PORT="$port" \
        PHOENIX_GRPC_PORT="$grpc" PHOENIX_TELEMETRY_ENABLED=false \
        PHOENIX_ALLOW_EXTERNAL_RESOURCES=false \
        setsid "$VENV/bin/phoenix" serve >"$dir/phoenix.log" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$dir/pid"
    for _ in $(seq 1 240); do
        if ready "$url"; then
            echo "$url" >"$dir/url"
            echo "$url"
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || { tail -20 "$dir/phoenix.log" >&2; die "phoenix exited"; }
        sleep 0.5
    done
    tail -20 "$dir/phoenix.log" >&2
    die "phoenix not ready after 120 s"
}

stop() {
    local dir="$1"
    [[ -f "$dir/pid" ]] || return 0
    kill -- -"$(cat "$dir/pid")" 2>/dev/null || kill "$(cat "$dir/pid")" 2>/dev/null || true
    rm -f "$dir/pid" "$dir/url"
}

case "${1:-}" in
    install) install ;;
    start) [[ $# -eq 2 ]] || die "usage: scripts/phoenix.sh start DIR"; start "$(realpath -m "$2")" ;;
    stop) [[ $# -eq 2 ]] || die "usage: scripts/phoenix.sh stop DIR"; stop "$(realpath -m "$2")" ;;
    *) sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
