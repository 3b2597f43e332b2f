#!/usr/bin/env bash
# Figures of BENCHMARKS.md "PostgreSQL store": writes a synthetic corpus into the PostgreSQL of
# scripts/pg.sh through the ingest path and times searches (src/kb/postgres/bench.rs).
#   scripts/bench-postgres.sh                 # 1,000,000 passages full text; 100,000 hybrid
#   FTS_PASSAGES=100000 HYBRID_PASSAGES=20000 scripts/bench-postgres.sh
# Cost on a 2-core machine: about 8 minutes at the defaults (most of it writing).
# BENCH_REUSE=1 searches what the last run wrote (the databases stay in target/tmp/pg-bench).
# BENCH_VECTORS=DIR: real-shaped vectors from eval/real_vectors.py's files instead of random ones;
# BENCH_TENANT_INDEX_ROWS: the tenant-index threshold of the second pinned pass (default 10000).
# PG_OPTIONS: server options for this start (scripts/pg.sh), e.g. the 1,000,000-row hybrid run
# of BENCHMARKS.md "Tenants at a million passages":
#   FTS_PASSAGES=1000 HYBRID_PASSAGES=1000000 BENCH_VECTORS=.local/real-vectors \
#   PG_OPTIONS="-c shared_buffers=6GB -c maintenance_work_mem=4GB -c max_parallel_maintenance_workers=2" \
#   scripts/bench-postgres.sh        # about 45 minutes on 2 cores
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${CARGO_TARGET_DIR:-target}/tmp/pg-bench"
url="$(scripts/pg.sh start "$dir")"
trap 'scripts/pg.sh stop "$dir" >/dev/null 2>&1 || true' EXIT
bin="$(ls -d .local/venv-pg/lib/python*/site-packages/*pgserver/pginstall/bin | head -1)"
base="${url%/*}"
if [[ -z "${BENCH_REUSE:-}" ]]; then
    for db in bench_fts bench_hybrid; do
        "$bin/psql" -X -q "$url" -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
    done
fi
BOUNDED_RAG_PG_URL="$base/bench_fts" BENCH_PASSAGES="${FTS_PASSAGES:-1000000}" \
    cargo test --lib -q postgres::bench::full_text_at_scale -- --ignored --nocapture
BOUNDED_RAG_PG_URL="$base/bench_hybrid" BENCH_PASSAGES="${HYBRID_PASSAGES:-100000}" \
    BENCH_DIMS="${HYBRID_DIMS:-384}" \
    cargo test --lib -q postgres::bench::hybrid_at_scale -- --ignored --nocapture
"$bin/psql" -X -tA "$base/bench_fts" -c \
    "SELECT 'database size: ' || pg_size_pretty(pg_database_size('bench_fts')) || ' (full text), ' || pg_size_pretty(pg_database_size('bench_hybrid')) || ' (hybrid)'"
