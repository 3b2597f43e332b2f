#!/usr/bin/env bash
# The deployed functions' size budget, checked in CI (.ci/run): builds every function of
# template.yaml for arm64 as `sam build` does (scripts/build-lambda.sh) and fails when a
# bootstrap is over its budget: 9.5 MB for `api` (the function whose cold start callers wait
# for), 10 MB for the others (1 MB = 1,000,000 bytes, as BENCHMARKS.md counts). Prints one line
# per function: name, bytes, budget, verdict.
# Cost: one release build for aarch64 (the dependencies once, then five fat-LTO links), about
# 15 minutes on 2 cores from a cold target directory.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" != "--no-build" ]; then
    scripts/build-lambda.sh >&2
fi
over=0
for function in api stream worker sweeper sync; do
    file="${CARGO_TARGET_DIR:-target}/lambda/$function/bootstrap"
    budget=10000000
    [ "$function" = api ] && budget=9500000
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
