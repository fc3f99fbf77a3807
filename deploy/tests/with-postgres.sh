#!/usr/bin/env bash
# Runs COMMAND against a PostgreSQL 15 server of its own (deploy/tests/run.sh uses it for
# the Kubernetes check; docs/deploy.md, "The checks"):
#
#   deploy/tests/with-postgres.sh COMMAND [ARGUMENTS...]
#
# 1. initdb, as the `postgres` user, into a new temporary folder owned by postgres (the
#    superuser's password from a file in that folder; local socket connections trusted,
#    TCP connections need a password, scram-sha-256);
# 2. the server on a free loopback port (`pg_ctl -o "-p PORT -k DIR -c
#    listen_addresses=127.0.0.1"`), its socket in the folder;
# 3. the role `dray` with a random password, the database `platform` it owns, and the
#    schema `fruits` in it (the names deploy/kubernetes/ uses);
# 4. COMMAND with DRAY_TEST_POSTGRES_URL (postgresql://dray@127.0.0.1:PORT/platform, no
#    password in it) and DRAY_TEST_POSTGRES_PASSWORD in its environment;
# 5. the server stopped and the folder removed on every way out (the command's end, an
#    error, Ctrl-C, SIGTERM).
#
# Exits with COMMAND's status. A machine without PostgreSQL 15 is an error, never a skip.
# Needs root (runs initdb and the server as `postgres`).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 COMMAND [ARGUMENTS...]" >&2; exit 2; }

bin=/usr/lib/postgresql/15/bin
if [ ! -x "$bin/initdb" ] || [ ! -x "$bin/pg_ctl" ] || ! command -v psql >/dev/null || ! id postgres >/dev/null 2>&1; then
  echo "postgres: PostgreSQL 15 is not installed ($bin/initdb, psql and the user postgres are needed); scripts/install-deps.sh installs the postgresql package" >&2
  exit 1
fi
[ "$(id -u)" = 0 ] || { echo "postgres: run as root (initdb and the server run as the user postgres through runuser)" >&2; exit 1; }

folder=$(mktemp -d "${TMPDIR:-/tmp}/dray-deploy-pg.XXXXXXXX")
# From /, which the postgres user can enter (the caller's folder may be closed to it).
as_postgres() { (cd / && runuser -u postgres -- "$@"); }
child=
stop() {
  [ -z "$child" ] || kill "$child" 2>/dev/null || true
  if [ -f "$folder/data/postmaster.pid" ]; then
    as_postgres "$bin/pg_ctl" -D "$folder/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$folder"
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

secret() { od -An -tx1 -N16 /dev/urandom | tr -d ' \n'; }
mkdir "$folder/socket"
# initdb reads the superuser's password from a regular file (a pipe such as <(...) can be
# read before initdb opens it, or not at all by another user).
(umask 077 && secret >"$folder/superuser-password")
chown -R postgres:postgres "$folder"
chmod 700 "$folder"
as_postgres "$bin/initdb" -D "$folder/data" -U postgres --pwfile="$folder/superuser-password" \
  --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 --no-sync >"$folder/initdb.log" 2>&1 || {
  echo "postgres: initdb failed:" >&2
  cat "$folder/initdb.log" >&2
  exit 1
}

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# A free port can be taken by someone else between asking and listening: try again.
port=
for _ in 1 2 3; do
  candidate=$(free_port)
  if as_postgres "$bin/pg_ctl" -D "$folder/data" -l "$folder/server.log" -w -t 60 \
    -o "-p $candidate -k $folder/socket -c listen_addresses=127.0.0.1" start >/dev/null; then
    port=$candidate
    break
  fi
done
if [ -z "$port" ]; then
  echo "postgres: the server did not start:" >&2
  cat "$folder/server.log" >&2
  exit 1
fi

password=$(secret)
admin() { as_postgres psql -X -q -v ON_ERROR_STOP=1 -h "$folder/socket" -p "$port" -U postgres "$@"; }
# The password goes through standard input, never a command line that ps shows.
admin -d postgres >/dev/null <<SQL
CREATE ROLE dray LOGIN PASSWORD '$password';
CREATE DATABASE platform OWNER dray;
SQL
admin -d platform -c "CREATE SCHEMA fruits AUTHORIZATION dray" >/dev/null

export DRAY_TEST_POSTGRES_URL="postgresql://dray@127.0.0.1:$port/platform"
export DRAY_TEST_POSTGRES_PASSWORD="$password"
# In the background, so that a signal to this script ends the wait at once (bash runs a
# trap only between commands), stops the command and the server.
"$@" &
child=$!
status=0
wait "$child" || status=$?
child=
exit "$status"
