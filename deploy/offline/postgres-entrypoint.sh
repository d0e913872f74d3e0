#!/bin/sh
# The postgres:16 image's contract, on Debian's PostgreSQL: POSTGRES_USER (default
# postgres), POSTGRES_PASSWORD (required unless POSTGRES_HOST_AUTH_METHOD=trust),
# POSTGRES_DB (default the user) and PGDATA (default /var/lib/postgresql/data) make
# the cluster on first start; later starts reuse it. TCP clients authenticate with
# scram-sha-256, the local socket (pg_isready, the healthcheck) is trusted.
set -eu
BIN=/usr/lib/postgresql/15/bin
export PGDATA="${PGDATA:-/var/lib/postgresql/data}"
user="${POSTGRES_USER:-postgres}"
db="${POSTGRES_DB:-$user}"
auth="${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}"

[ "${1:-}" = postgres ] && shift  # `command: ["postgres", "-c", ...]`, as upstream

if [ "$(id -u)" = 0 ]; then
    mkdir -p "$PGDATA" /run/postgresql
    chown -R postgres:postgres "$PGDATA" /run/postgresql
    chmod 700 "$PGDATA"
    exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

if [ ! -s "$PGDATA/PG_VERSION" ]; then
    if [ -z "${POSTGRES_PASSWORD:-}" ] && [ "$auth" != trust ]; then
        echo "postgres stand-in: POSTGRES_PASSWORD is not set (or set POSTGRES_HOST_AUTH_METHOD=trust)" >&2
        exit 1
    fi
    pwfile="$(mktemp)"
    printf '%s' "${POSTGRES_PASSWORD:-}" >"$pwfile"
    "$BIN/initdb" -D "$PGDATA" -U "$user" --pwfile="$pwfile" -E UTF8 \
        --auth-local=trust --auth-host="$auth" >/dev/null
    rm -f "$pwfile"
    echo "host all all all $auth" >>"$PGDATA/pg_hba.conf"
    echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
    if [ "$db" != postgres ]; then
        # A private start (no TCP) to create the database, as the official image does.
        "$BIN/pg_ctl" -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
        "$BIN/psql" -v ON_ERROR_STOP=1 -U "$user" -d postgres -q \
            -c "CREATE DATABASE \"$db\" OWNER \"$user\""
        "$BIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null
    fi
    echo "postgres stand-in: made the cluster in $PGDATA (user $user, database $db)"
fi
exec "$BIN/postgres" -D "$PGDATA" "$@"
