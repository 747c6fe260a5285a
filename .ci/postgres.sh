#!/usr/bin/env bash
# Throwaway PostgreSQL 15 cluster for the infra/postgres conformance suite.
#
#   eval "$(.ci/postgres.sh start)"   # prints export lines; cluster in a temp dir
#   .ci/postgres.sh stop              # stops the cluster and removes its dir
#
# start prints ENGRAM_TEST_POSTGRES_URL and ENGRAM_TEST_POSTGRES_DIR; stop reads
# the latter (or takes the dir as $2). Needs root (runs the server as postgres)
# or to be run as the postgres user. Cluster: trust auth, fsync off, loopback.
set -euo pipefail

PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}

as_pg() {
  if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$1"; else sh -c "$1"; fi
}

free_port() {
  python3 - <<'PY' 2>/dev/null && return
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()
PY
  # Fallback without python: scan from 54330 for a port nobody listens on.
  local p=54330
  while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
  echo "$p"
}

case "${1:-start}" in
start)
  dir=$(mktemp -d /tmp/engram-pg.XXXXXX)
  chmod 755 "$dir"
  [ "$(id -u)" = 0 ] && chown postgres "$dir"
  as_pg "$PGBIN/initdb -D $dir/data -A trust -U postgres --no-sync -E UTF8" >"$dir/initdb.log" 2>&1 ||
    { cat "$dir/initdb.log" >&2; exit 1; }
  port=$(free_port)
  as_pg "$PGBIN/pg_ctl -D $dir/data -l $dir/server.log -o '-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off' -w start" >&2 ||
    { cat "$dir/server.log" >&2; exit 1; }
  echo "export ENGRAM_TEST_POSTGRES_URL='postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable'"
  echo "export ENGRAM_TEST_POSTGRES_DIR='$dir'"
  ;;
stop)
  dir=${2:-${ENGRAM_TEST_POSTGRES_DIR:-}}
  [ -n "$dir" ] && [ -d "$dir" ] || { echo "postgres.sh stop: no cluster dir" >&2; exit 1; }
  as_pg "$PGBIN/pg_ctl -D $dir/data -m fast -w stop" >&2 || true
  rm -rf "$dir"
  ;;
*)
  echo "usage: $0 [start|stop [dir]]" >&2; exit 2
  ;;
esac
