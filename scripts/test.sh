#!/usr/bin/env bash
# The whole test suite: checks the architecture (scripts/check-architecture.py: no cycle
# between files of src/, no file of src/ or tests/ over 500 lines, most items crate-private; its own self-test
# first), installs what the tests talk to (moto's server, cargo-lambda, schemathesis, mdbook)
# into .local/venv, PostgreSQL with pgvector into .local/venv-pg (scripts/pg.sh; the PostgreSQL store's
# tests start it, this script stops it) and Debian's chromium and chromium-driver (the
# playground's browser test), Arize Phoenix into .local/venv-phoenix (scripts/phoenix.sh; about
# 1.5 min and 850 MB on the first run: tests/phoenix.rs starts it, this script stops it), then
# runs every unit and integration test, then fuzzes the HTTP API from openapi.yaml against the
# local stack and `bounded-rag serve` (scripts/api-fuzz.sh: schemathesis, a fixed seed and
# number of cases), then validates the SAM stack.
#
# The docs too: every relative link of README.md and the book resolves (scripts/check-links.py,
# its self-test first), the book builds (`mdbook build docs`, into docs/book/), and the README's
# first command answers with citations once the tests have built the binary
# (scripts/quickstart-test.py).
set -euo pipefail
cd "$(dirname "$0")/.."

python3 scripts/check-architecture.py --self-test
python3 scripts/check-architecture.py
python3 scripts/check-links.py --self-test
python3 scripts/real_model_report.py --self-test
python3 scripts/check-links.py
scripts/setup-test-tools.sh
.local/venv/bin/mdbook build docs
# The PostgreSQL the tests start (tests/support/postgres.rs) is stopped however they end.
trap 'scripts/pg.sh stop "${CARGO_TARGET_DIR:-target}/tmp/pg" >/dev/null 2>&1 || true; scripts/phoenix.sh stop "${CARGO_TARGET_DIR:-target}/tmp/phoenix" >/dev/null 2>&1 || true' EXIT
# A failure's panic message is printed again at the end, where CI's log tail shows it.
log="${CARGO_TARGET_DIR:-target}/test-output.log"
mkdir -p "$(dirname "$log")"
if ! cargo test --locked --all-features "$@" 2>&1 | tee "$log"; then
  echo "── the failing tests' panics ──" >&2
  grep -A6 "panicked at" "$log" | grep -v "^ *[0-9]*: \|^ *at " >&2 || true
  exit 101
fi
python3 scripts/quickstart-test.py
scripts/api-fuzz.sh
scripts/validate-infra.sh
