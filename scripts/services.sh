#!/usr/bin/env bash
# Finds or starts the services the tests need and exports their addresses:
#   TEST_REDIS_URL      a Redis (given; else 127.0.0.1:6379 when it answers; else a throwaway one)
#   TEST_DATABASE_URL   a PostgreSQL (given; else 127.0.0.1:5432 when it answers; else a throwaway one)
#   TEST_REDIS_CLUSTER  a 3-master Redis Cluster (given; else a throwaway one)
#   TEST_PG_BIN         the directory of initdb/pg_ctl, for tests that start their own
# Missing server packages are installed with apt-get when running as root.
# EDGEKIT_REDIS_PORT / EDGEKIT_PG_PORT change where an existing server is looked for
# (default 6379 / 5432); pointing them at free ports proves the throwaway path.
# Source it; call services_stop (the caller's EXIT trap) to stop exactly what it started.

EDGEKIT_TMP=$(mktemp -d /tmp/edgekit-services.XXXXXX)
chmod 755 "$EDGEKIT_TMP"
EDGEKIT_STARTED_REDIS=()   # pid files
EDGEKIT_STARTED_PG=""      # data dir

say() { echo "services: $*" >&2; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

free_port() { # a port whose port+10000 (cluster bus) is free too
  # Both below Linux's ephemeral range (32768-60999 by default): a client
  # connection's local port there would make the bind fail.
  local p
  while :; do
    p=$(( 20000 + RANDOM % 2700 ))
    if ! port_open "$p" && ! port_open $((p + 10000)); then echo "$p"; return; fi
  done
}

redis_answers() { # host port
  local reply
  reply=$( (exec 3<>"/dev/tcp/$1/$2" && printf 'PING\r\n' >&3 && timeout 1 head -c 7 <&3) 2>/dev/null ) || return 1
  [[ "$reply" == "+PONG"* ]]
}

apt_install() {
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    say "cannot install $* (not root or no apt-get)"; return 1
  fi
  if [ -z "${EDGEKIT_APT_UPDATED:-}" ]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || return 1
    EDGEKIT_APT_UPDATED=1
  fi
  say "installing $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2
}

need_redis_server() {
  command -v redis-server >/dev/null && command -v redis-cli >/dev/null && return 0
  apt_install redis-server redis-tools
  # Debian's package may start a server of its own; we never rely on it.
}

pg_bin_dir() {
  if command -v pg_ctl >/dev/null; then dirname "$(command -v pg_ctl)"; return; fi
  ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1
}

start_redis() { # port [extra args...] ; waits until it answers
  local port=$1; shift
  local dir="$EDGEKIT_TMP/redis-$port"
  mkdir -p "$dir"
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
    --dir "$dir" --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" "$@" >&2 || return 1
  EDGEKIT_STARTED_REDIS+=("$dir/redis.pid")
  for _ in $(seq 1 200); do redis_answers 127.0.0.1 "$port" && return 0; sleep 0.02; done
  say "redis on $port did not start:"; cat "$dir/redis.log" >&2; return 1
}

setup_redis() {
  if [ -n "${TEST_REDIS_URL:-}" ]; then say "redis: using TEST_REDIS_URL"; return 0; fi
  local known=${EDGEKIT_REDIS_PORT:-6379}
  if redis_answers 127.0.0.1 "$known"; then
    export TEST_REDIS_URL="redis://127.0.0.1:$known/0"; say "redis: found 127.0.0.1:$known"; return 0
  fi
  need_redis_server || return 1
  local port; port=$(free_port)
  start_redis "$port" || return 1
  export TEST_REDIS_URL="redis://127.0.0.1:$port/0"
  say "redis: started a throwaway server on $port"
}

setup_cluster() {
  if [ -n "${TEST_REDIS_CLUSTER:-}" ]; then say "redis cluster: using TEST_REDIS_CLUSTER"; return 0; fi
  need_redis_server || return 1
  local attempt
  for attempt in 1 2 3; do # a port taken between the check and the bind: again
    start_cluster && return 0
    say "redis cluster: attempt $attempt failed"
  done
  return 1
}

start_cluster() {
  local ports=() addrs=() p
  for _ in 1 2 3; do
    p=$(free_port)
    if ! start_redis "$p" --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 2000; then
      for p in "${ports[@]}"; do redis-cli -p "$p" shutdown nosave >/dev/null 2>&1; done
      return 1
    fi
    ports+=("$p"); addrs+=("127.0.0.1:$p")
  done
  redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes >"$EDGEKIT_TMP/cluster-create.log" 2>&1 || {
    cat "$EDGEKIT_TMP/cluster-create.log" >&2; return 1; }
  for _ in $(seq 1 300); do
    local ok=1
    for p in "${ports[@]}"; do
      redis-cli -p "$p" cluster info 2>/dev/null | grep -q 'cluster_state:ok' || ok=0
    done
    [ "$ok" = 1 ] && break
    sleep 0.05
  done
  export TEST_REDIS_CLUSTER
  TEST_REDIS_CLUSTER=$(IFS=,; echo "${addrs[*]}")
  say "redis cluster: started 3 masters on ${ports[*]}"
}

pg_answers() { # host port: a libpq-free check that something speaks on the port
  port_open "$2"
}

setup_postgres() {
  local bin; bin=$(pg_bin_dir)
  if [ -z "$bin" ]; then apt_install postgresql && bin=$(pg_bin_dir); fi
  [ -n "$bin" ] && export TEST_PG_BIN="$bin"
  if [ -n "${TEST_DATABASE_URL:-}" ]; then say "postgres: using TEST_DATABASE_URL"; return 0; fi
  local known=${EDGEKIT_PG_PORT:-5432}
  if pg_answers 127.0.0.1 "$known"; then
    export TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$known/test?sslmode=disable"
    # the shared server may not have a "test" database; fall back to "postgres"
    if [ -x "$bin/psql" ] && ! "$bin/psql" "$TEST_DATABASE_URL" -Atc 'select 1' >/dev/null 2>&1; then
      export TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$known/postgres?sslmode=disable"
    fi
    say "postgres: found 127.0.0.1:$known"; return 0
  fi
  [ -n "$bin" ] || { say "postgres: no server binaries"; return 1; }
  local port; port=$(free_port)
  local data="$EDGEKIT_TMP/pg"
  local runas=()
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
    runas=(runuser -u postgres --)
    mkdir -p "$data"; chown postgres "$data"
  fi
  "${runas[@]}" "$bin/initdb" -D "$data" -A trust -U postgres --no-sync -E UTF8 >"$EDGEKIT_TMP/initdb.log" 2>&1 || {
    cat "$EDGEKIT_TMP/initdb.log" >&2; return 1; }
  "${runas[@]}" "$bin/pg_ctl" -D "$data" -l "$data/log" -w -t 30 \
    -o "-p $port -k $data -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off" start >&2 || {
    cat "$data/log" >&2; return 1; }
  EDGEKIT_STARTED_PG="$data"
  EDGEKIT_PG_RUNAS=("${runas[@]}")
  export TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
  say "postgres: started a throwaway server on $port"
}

services_stop() {
  local pidf pids=() p
  for pidf in "${EDGEKIT_STARTED_REDIS[@]}"; do
    [ -f "$pidf" ] && pids+=("$(cat "$pidf")") && { kill "${pids[-1]}" 2>/dev/null || true; }
  done
  if [ -n "$EDGEKIT_STARTED_PG" ]; then
    "${EDGEKIT_PG_RUNAS[@]}" "$(pg_bin_dir)/pg_ctl" -D "$EDGEKIT_STARTED_PG" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  # A Redis writes its files (a cluster node its nodes.conf) as it shuts
  # down: wait for each (5 s at most) before removing their directory, so
  # the removal does not race it and fail the run after its tests passed.
  for p in "${pids[@]}"; do
    for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
  done
  rm -rf "$EDGEKIT_TMP" 2>/dev/null || { sleep 1; rm -rf "$EDGEKIT_TMP"; } || true
}

services_start() {
  local failed=0
  setup_redis || { say "no Redis available"; failed=1; }
  setup_cluster || { say "no Redis Cluster available"; failed=1; }
  setup_postgres || { say "no PostgreSQL available"; failed=1; }
  if [ "$failed" = 1 ] && [ "${CI:-}" = "true" ]; then
    say "a service is missing and CI=true: failing"; return 1
  fi
  return 0
}
