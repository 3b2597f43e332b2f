#!/usr/bin/env bash
# Builds the Lambda bootstraps for arm64 (provided.al2023), as `sam build` does:
#   target/lambda/{api,worker,stream,sweeper,sync}/bootstrap (every function of template.yaml)
# Installs what the cross build needs: the aarch64 Rust target (rustup), cargo-lambda and zig
# (PyPI, into .local/venv).
set -euo pipefail
cd "$(dirname "$0")/.."

rustup target add aarch64-unknown-linux-gnu >/dev/null
scripts/setup-test-tools.sh >/dev/null
if [ ! -x .local/venv/bin/python-zig ]; then
    .local/venv/bin/python -m pip install --quiet --disable-pip-version-check ziglang
fi
export PATH="$PWD/.local/venv/bin:$PATH"
# Every function as `sam build` builds it (template.yaml: rust-cargolambda, the release profile).
# SYNC_PROFILE=release-sync builds the sync function so that a reader's panic unwinds into that
# file's typed failure instead of ending the invocation (Cargo.toml; 1.8 MB larger, over the
# 10 MB budget: BENCHMARKS.md "Bootstrap size per function").
if [ "${SYNC_PROFILE:-release}" = release ]; then
    cargo lambda build --release --arm64 --bin api --bin worker --bin stream --bin sweeper --bin sync "$@"
else
    cargo lambda build --release --arm64 --bin api --bin worker --bin stream --bin sweeper "$@"
    cargo lambda build --profile "$SYNC_PROFILE" --arm64 --bin sync "$@"
fi
for function in api worker stream sweeper sync; do
    f="${CARGO_TARGET_DIR:-target}/lambda/$function/bootstrap"
    printf '%s %s bytes\n' "$f" "$(stat -c %s "$f")"
done
