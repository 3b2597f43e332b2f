#!/usr/bin/env bash
# The whole test suite: installs what the tests talk to (moto's server, cargo-lambda) into
# .local/venv, then runs every unit and integration test, then validates the SAM stack.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup-test-tools.sh
cargo test --locked --all-features "$@"
scripts/validate-infra.sh
