#!/usr/bin/env bash
# services.sh — throwaway PostgreSQL and Redis servers on 127.0.0.1 for the session-store
# conformance tests and benchmark of agent-core (features `postgres`, `redis`).
#
#   eval "$(bash scripts/services.sh start)"   # prints `export AGENT_TEST_POSTGRES_URL=…`
#                                              # and `export AGENT_TEST_REDIS_URL=…`
#   cargo test -p agent-core --all-features
#   bash scripts/services.sh stop              # ends only what `start` started
#
#   services.sh start|stop|status|env
#
# `start` is idempotent: servers it already runs are reused. It installs the Debian
# packages `postgresql` and `redis-server` with apt-get when their programs are missing
# (running `apt-get update` first only when the package lists do not know them). Both
# servers get their own data directories under $AGENT_SERVICES_DIR (default
# /tmp/agent-services-$UID) and free ports on 127.0.0.1. PostgreSQL refuses to run as
# root: as root, it runs as the `postgres` user (created by the package) via runuser.
# Only the export lines go to stdout; progress goes to stderr.
set -euo pipefail

STATE="${AGENT_SERVICES_DIR:-/tmp/agent-services-$(id -u)}"
PGDATA="$STATE/pg/data"
PGSOCK="$STATE/pg/sock"
PGLOG="$STATE/pg/server.log"
REDIS_DIR="$STATE/redis"
ENVFILE="$STATE/env"
DB="agent_test"

log() { echo "[services] $*" >&2; }
die() { echo "[services] error: $*" >&2; exit 1; }
is_root() { [ "$(id -u)" -eq 0 ]; }

pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }

# Run a PostgreSQL program as a non-root user.
as_pg() {
  if is_root; then runuser -u postgres -- "$@"; else "$@"; fi
}

apt_install() {
  local sudo=()
  if ! is_root; then
    command -v sudo >/dev/null 2>&1 || die "installing $* needs root (or sudo); install them and retry"
    sudo=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  local known=1 p
  for p in "$@"; do
    apt-cache show --no-all-versions "$p" >/dev/null 2>&1 || known=0
  done
  if [ "$known" -eq 0 ]; then
    log "apt-get update (the package lists do not know: $*)"
    "${sudo[@]}" apt-get update -q >&2
  fi
  log "apt-get install $*"
  if ! "${sudo[@]}" apt-get install -y -q --no-install-recommends "$@" >&2; then
    log "install failed; refreshing the package lists and retrying"
    "${sudo[@]}" apt-get update -q >&2
    "${sudo[@]}" apt-get install -y -q --no-install-recommends "$@" >&2
  fi
}

ensure_installed() {
  local missing=()
  [ -n "$(pg_bin)" ] && [ -x "$(pg_bin)/initdb" ] || missing+=(postgresql)
  command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1 || missing+=(redis-server)
  if [ "${#missing[@]}" -gt 0 ]; then apt_install "${missing[@]}"; fi
  [ -n "$(pg_bin)" ] || die "PostgreSQL programs not found under /usr/lib/postgresql/*/bin after installing"
  command -v redis-server >/dev/null 2>&1 || die "redis-server not found after installing"
  if is_root; then
    id postgres >/dev/null 2>&1 || die "no \`postgres\` user to run PostgreSQL as (the postgresql package creates it)"
  fi
}

# A TCP port on 127.0.0.1 that nothing listens on.
free_port() {
  local p i
  for i in $(seq 1 100); do
    p=$(( 20000 + (RANDOM * 32768 + RANDOM) % 40000 ))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
  die "no free port found"
}

pg_ready() { [ -n "${PGPORT:-}" ] && "$(pg_bin)/pg_isready" -q -h 127.0.0.1 -p "$PGPORT" -d "$DB" -U postgres; }
redis_ready() { [ -n "${REDIS_PORT:-}" ] && [ "$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null)" = "PONG" ]; }

print_env() {
  echo "export AGENT_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:$PGPORT/$DB"
  echo "export AGENT_TEST_REDIS_URL=redis://127.0.0.1:$REDIS_PORT/0"
}

load_state() {
  PGPORT=""; REDIS_PORT=""
  if [ -f "$STATE/ports" ]; then
    # shellcheck disable=SC1091
    . "$STATE/ports"
  fi
}

start_postgres() {
  local bin; bin="$(pg_bin)"
  mkdir -p "$STATE/pg" "$PGSOCK"
  if is_root; then chown -R postgres: "$STATE/pg"; chmod 0755 "$STATE"; fi
  if [ ! -f "$PGDATA/PG_VERSION" ]; then
    log "initdb $PGDATA"
    as_pg "$bin/initdb" -D "$PGDATA" -U postgres -A trust -E UTF8 --no-sync >"$STATE/pg/initdb.log" 2>&1 ||
      { cat "$STATE/pg/initdb.log" >&2; die "initdb failed"; }
  fi
  local try
  for try in 1 2 3; do
    PGPORT="$(free_port)"
    log "starting PostgreSQL on 127.0.0.1:$PGPORT"
    if as_pg "$bin/pg_ctl" -D "$PGDATA" -l "$PGLOG" -w -t 60 \
         -o "-c listen_addresses=127.0.0.1 -p $PGPORT -c unix_socket_directories=$PGSOCK -c max_connections=300" \
         start >/dev/null 2>&1; then
      break
    fi
    tail -n 20 "$PGLOG" >&2 || true
    PGPORT=""
  done
  [ -n "$PGPORT" ] || die "PostgreSQL did not start (log: $PGLOG)"
  local i
  for i in $(seq 1 60); do
    "$bin/pg_isready" -q -h 127.0.0.1 -p "$PGPORT" -U postgres && break
    sleep 0.5
  done
  if ! "$bin/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres -d postgres -tAc \
       "SELECT 1 FROM pg_database WHERE datname = '$DB'" | grep -q 1; then
    "$bin/createdb" -h 127.0.0.1 -p "$PGPORT" -U postgres "$DB"
  fi
}

start_redis() {
  mkdir -p "$REDIS_DIR"
  local try i
  for try in 1 2 3; do
    REDIS_PORT="$(free_port)"
    log "starting Redis on 127.0.0.1:$REDIS_PORT"
    rm -f "$REDIS_DIR/redis.pid"
    redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$REDIS_DIR" \
      --daemonize yes --pidfile "$REDIS_DIR/redis.pid" --logfile "$REDIS_DIR/redis.log" \
      --save "" --appendonly no >/dev/null 2>&1 || true
    for i in $(seq 1 60); do
      redis_ready && return 0
      sleep 0.25
    done
    tail -n 20 "$REDIS_DIR/redis.log" >&2 || true
    stop_redis
  done
  die "Redis did not start (log: $REDIS_DIR/redis.log)"
}

stop_postgres() {
  local bin; bin="$(pg_bin)"
  if [ -n "$bin" ] && [ -f "$PGDATA/postmaster.pid" ]; then
    log "stopping PostgreSQL ($PGDATA)"
    as_pg "$bin/pg_ctl" -D "$PGDATA" -m fast -w -t 60 stop >/dev/null 2>&1 || true
  fi
}

stop_redis() {
  local pid i
  if [ -f "$REDIS_DIR/redis.pid" ]; then
    pid="$(cat "$REDIS_DIR/redis.pid")"
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
      log "stopping Redis (pid $pid)"
      kill "$pid" 2>/dev/null || true
      for i in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$REDIS_DIR/redis.pid"
  fi
}

cmd_start() {
  load_state
  if pg_ready && redis_ready; then
    log "already running (state in $STATE)"
    print_env
    return
  fi
  # Something is left over but not healthy: end what we started before, start again.
  if [ -d "$STATE" ]; then cmd_stop; fi
  ensure_installed
  mkdir -p "$STATE"
  start_postgres
  start_redis
  printf 'PGPORT=%s\nREDIS_PORT=%s\n' "$PGPORT" "$REDIS_PORT" >"$STATE/ports"
  print_env | tee "$ENVFILE"
  log "ready: PostgreSQL on 127.0.0.1:$PGPORT (database $DB), Redis on 127.0.0.1:$REDIS_PORT"
}

cmd_stop() {
  [ -d "$STATE" ] || { log "nothing to stop"; return; }
  stop_postgres
  stop_redis
  rm -rf "$STATE"
  log "stopped; removed $STATE"
}

cmd_status() {
  load_state
  if pg_ready && redis_ready; then print_env; else log "not running"; return 1; fi
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status | env) cmd_status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
