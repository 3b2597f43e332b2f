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
cargo lambda build --release --arm64 --bin api --bin worker --bin stream --bin sweeper "$@"
# The sync function unwinds on panic (Cargo.toml `release-sync`): a hostile file's reader
# panic becomes that file's typed failure.
cargo lambda build --profile release-sync --arm64 --bin sync "$@"
for function in api worker stream sweeper sync; do
    f="${CARGO_TARGET_DIR:-target}/lambda/$function/bootstrap"
    printf '%s %s bytes\n' "$f" "$(stat -c %s "$f")"
done
