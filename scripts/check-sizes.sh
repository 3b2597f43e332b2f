#!/usr/bin/env bash
# The deployed functions' size budget, checked in CI (.ci/run): builds every function of
# template.yaml for arm64 as `sam build` does (scripts/build-lambda.sh) and fails when a
# bootstrap is over its budget: 9.6 MB for `api` (the function whose cold start callers wait
# for), 10 MB for the others (1 MB = 1,000,000 bytes, as BENCHMARKS.md counts). Prints one line
# per function: name, bytes, budget, verdict.
# Cost: one release build for aarch64 (the dependencies once, then five fat-LTO links), about
# 15 minutes on 2 cores from a cold target directory.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" != "--no-build" ]; then
    # The cross build needs the aarch64 standard library from the Rust distribution server. A
    # machine that cannot reach it cannot build what deploys: say so loudly rather than fail
    # everything else CI checked (the sizes are then unchecked, and the log says it).
    if ! rustup target add aarch64-unknown-linux-gnu >/dev/null 2>&1; then
        echo "check-sizes: SKIPPED, sizes NOT checked: the aarch64-unknown-linux-gnu target could not be installed (rustup target add failed)" >&2
        exit 0
    fi
    scripts/build-lambda.sh >&2
fi
over=0
for function in api stream worker sweeper sync; do
    file="${CARGO_TARGET_DIR:-target}/lambda/$function/bootstrap"
    budget=10000000
    [ "$function" = api ] && budget=9600000
    if [ ! -f "$file" ]; then
        echo "$function: no bootstrap at $file" >&2
        over=1
        continue
    fi
    bytes=$(stat -c %s "$file")
    verdict=ok
    if [ "$bytes" -gt "$budget" ]; then
        verdict="OVER by $((bytes - budget)) B"
        over=1
    fi
    printf '%-8s %10s B  budget %10s B  %s\n' "$function" "$bytes" "$budget" "$verdict"
done
exit "$over"
