#!/usr/bin/env bash
# make soak (not in CI): SOAK_DURATION (default 30m) of mixed traffic against
# a built bin/caddy — rate-limited requests, redirects, creates — with a
# throwaway Redis and PostgreSQL restarted every SOAK_RESTART_EVERY (default
# 3m, alternating). At the end, with the traffic stopped, Caddy's heap (after
# a GC) and goroutines (admin /debug/pprof) and its open file descriptors
# (/proc/<pid>/fd) must be back within SOAK_TOLERANCE percent (default 10) of
# the level measured the same way after the warm-up, and the click total of
# every link (management API) must equal the redirects the clients saw.
#
#   SOAK_DURATION=2m make soak
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/services.sh

to_seconds() { # 90, 90s, 2m, 1h
  local v=$1
  case "$v" in
    *h) echo $(( ${v%h} * 3600 ));; *m) echo $(( ${v%m} * 60 ));; *s) echo "${v%s}";; *) echo "$v";;
  esac
}
DURATION=$(to_seconds "${SOAK_DURATION:-30m}")
RESTART_EVERY=$(to_seconds "${SOAK_RESTART_EVERY:-3m}")
(( RESTART_EVERY * 3 > DURATION )) && RESTART_EVERY=$(( DURATION / 3 ))
TOLERANCE=${SOAK_TOLERANCE:-10}
CLIENTS=${SOAK_CLIENTS:-6}
WARMUP=${SOAK_WARMUP:-20}
API_KEY="soak-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"

log() { echo "soak: $(date -u +%H:%M:%S) $*" >&2; }

CADDY_PID=""
LOADERS=()
cleanup() {
  for p in "${LOADERS[@]}"; do kill "$p" 2>/dev/null; done
  [ -n "$CADDY_PID" ] && kill "$CADDY_PID" 2>/dev/null && wait "$CADDY_PID" 2>/dev/null
  services_stop
}
trap cleanup EXIT

need_redis_server || exit 1
PG_BIN=$(pg_bin_dir)
[ -n "$PG_BIN" ] || { log "PostgreSQL server binaries are needed"; exit 1; }

log "building bin/caddy"
go build -o bin/caddy ./cmd/caddy || exit 1

# A throwaway Redis with an append-only file: a graceful restart keeps the
# click stream (a Redis that loses its data also loses clicks not yet
# consumed; see docs/failure-modes.md).
REDIS_PORT=$(free_port)
REDIS_DIR="$EDGEKIT_TMP/soak-redis"
mkdir -p "$REDIS_DIR"
redis_start() {
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly yes --appendfsync always \
    --daemonize yes --dir "$REDIS_DIR" --pidfile "$REDIS_DIR/redis.pid" --logfile "$REDIS_DIR/redis.log" >&2 || return 1
  for _ in $(seq 1 200); do redis_answers 127.0.0.1 "$REDIS_PORT" && return 0; sleep 0.05; done
  return 1
}
redis_stop() { # graceful: SHUTDOWN flushes the AOF
  local pid; pid=$(cat "$REDIS_DIR/redis.pid" 2>/dev/null) || return 0
  kill "$pid" 2>/dev/null
  for _ in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.05; done
}
redis_start || { log "redis did not start"; exit 1; }
EDGEKIT_STARTED_REDIS+=("$REDIS_DIR/redis.pid")

# A throwaway PostgreSQL.
PG_PORT=$(free_port)
PG_DATA="$EDGEKIT_TMP/soak-pg"
RUNAS=()
if [ "$(id -u)" = 0 ]; then
  id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
  RUNAS=(runuser -u postgres --)
  mkdir -p "$PG_DATA"; chown postgres "$PG_DATA"
fi
"${RUNAS[@]}" "$PG_BIN/initdb" -D "$PG_DATA" -A trust -U postgres --no-sync -E UTF8 >"$EDGEKIT_TMP/soak-initdb.log" 2>&1 ||
  { cat "$EDGEKIT_TMP/soak-initdb.log" >&2; exit 1; }
pg_ctl_() { "${RUNAS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DATA" "$@"; }
pg_ctl_ -l "$PG_DATA/log" -w -t 30 -o "-p $PG_PORT -k $PG_DATA -c listen_addresses=127.0.0.1" start >&2 || exit 1
EDGEKIT_STARTED_PG="$PG_DATA"
EDGEKIT_PG_RUNAS=("${RUNAS[@]}")
DSN="postgres://postgres@127.0.0.1:$PG_PORT/postgres?sslmode=disable"

ADMIN=$(free_port)
PORT=$(free_port)
BASE="http://127.0.0.1:$PORT"
CONF="$EDGEKIT_TMP/soak.Caddyfile"
cat >"$CONF" <<CADDY
{
	admin 127.0.0.1:$ADMIN
	http_port $PORT
	auto_https off
	skip_install_trust
	storage file_system $EDGEKIT_TMP/caddy-data
}

http://127.0.0.1:$PORT {
	route /rl/* {
		ratelimit {
			zone per_client {
				key {http.request.header.X-Client}
				events 50
				window 1s
			}
			redis redis://127.0.0.1:$REDIS_PORT/0
			timeout 50ms
			on_error local
			instances 1
		}
		respond "ok"
	}
	route {
		shortener {
			store postgres "$DSN"
			redis redis://127.0.0.1:$REDIS_PORT/0
			api /api
			api_key $API_KEY
		}
		respond "home"
	}
}
CADDY
log "starting bin/caddy (admin :$ADMIN, http :$PORT, redis :$REDIS_PORT, postgres :$PG_PORT)"
bin/caddy run --config "$CONF" --adapter caddyfile >"$EDGEKIT_TMP/caddy.log" 2>&1 &
CADDY_PID=$!
for _ in $(seq 1 200); do curl -fs -o /dev/null "$BASE/" && break; sleep 0.1; done
curl -fs -o /dev/null "$BASE/" || { log "caddy did not start"; tail -20 "$EDGEKIT_TMP/caddy.log" >&2; exit 1; }

api() { curl -s -H "Authorization: Bearer $API_KEY" "$@"; }

# Links the clients follow.
CODES=()
for i in $(seq 1 20); do
  code=$(api -X POST -d "{\"long_url\":\"https://example.com/soak/$i\"}" "$BASE/api/links" | jq -r .code)
  [ -n "$code" ] && [ "$code" != null ] || { log "creating a link failed"; exit 1; }
  CODES+=("$code")
done

OUT="$EDGEKIT_TMP/soak-out"
mkdir -p "$OUT"
# One client: batches of 20 requests in one curl (one keep-alive
# connection), printing "<status> <url>" per request.
client() {
  local id=$1 n=0 args code
  local each=(-s -o /dev/null -w '%{http_code} %{url_effective}\n')
  while :; do
    args=()
    for i in $(seq 1 20); do
      n=$((n + 1))
      (( i > 1 )) && args+=(--next)
      case $((n % 10)) in
        0) args+=("${each[@]}" -X POST -H "Authorization: Bearer $API_KEY" -d "{\"long_url\":\"https://example.com/c$id/$n\"}" "$BASE/api/links") ;;
        1|2|3) args+=("${each[@]}" -H "X-Client: c$id" "$BASE/rl/x") ;;
        *) code=${CODES[$(( (n * 7 + id) % ${#CODES[@]} ))]}
           args+=("${each[@]}" "$BASE/$code") ;;
      esac
    done
    curl "${args[@]}" >>"$OUT/client-$id.log" 2>/dev/null
  done
}

measure() { # prints "heap goroutines fds"
  local heap gor fds
  heap=$(curl -s "http://127.0.0.1:$ADMIN/debug/pprof/heap?gc=1&debug=1" | awk '/^# HeapInuse = /{print $4}')
  gor=$(curl -s "http://127.0.0.1:$ADMIN/debug/pprof/goroutine?debug=1" | awk 'NR==1{print $4}')
  fds=$(ls "/proc/$CADDY_PID/fd" | wc -l)
  echo "$heap $gor $fds"
}

start_load() {
  for id in $(seq 1 "$CLIENTS"); do client "$id" & LOADERS+=($!); done
}
stop_load() {
  for p in "${LOADERS[@]}"; do kill "$p" 2>/dev/null; done
  wait "${LOADERS[@]}" 2>/dev/null
  LOADERS=()
}

log "warm-up ${WARMUP}s"
start_load
sleep "$WARMUP"
stop_load
sleep 3
read -r HEAP0 GOR0 FD0 < <(measure)
log "baseline: heap in use $HEAP0 B, goroutines $GOR0, fds $FD0"

log "soak ${DURATION}s, restarting Redis or PostgreSQL every ${RESTART_EVERY}s"
start_load
END=$(( $(date +%s) + DURATION ))
turn=0
while (( $(date +%s) < END )); do
  left=$(( END - $(date +%s) ))
  sleep $(( left < RESTART_EVERY ? left : RESTART_EVERY ))
  (( $(date +%s) + 5 >= END )) && break
  if (( turn % 2 == 0 )); then
    log "restarting Redis"; redis_stop; sleep 1; redis_start || { log "redis did not come back"; exit 1; }
  else
    log "restarting PostgreSQL"; pg_ctl_ -m fast -w restart -o "-p $PG_PORT -k $PG_DATA -c listen_addresses=127.0.0.1" >/dev/null 2>&1 ||
      { log "postgres did not come back"; exit 1; }
  fi
  turn=$((turn + 1))
done
stop_load
sleep 3

# Requests the clients saw.
cat "$OUT"/client-*.log >"$OUT/all.log"
TOTAL=$(wc -l <"$OUT/all.log")
log "requests: $TOTAL; by status: $(awk '{print $1}' "$OUT/all.log" | sort | uniq -c | awk '{printf "%s×%s ", $2, $1}')"

FAIL=0
# Clicks: every 302 a client saw is counted exactly once.
log "waiting for the click pipeline to settle"
for code in "${CODES[@]}"; do
  want=$(awk -v u="$BASE/$code" '$1 == 302 && $2 == u' "$OUT/all.log" | wc -l)
  got=""
  for _ in $(seq 1 60); do
    got=$(api "$BASE/api/links/$code" | jq -r '.clicks // "absent"')
    [ "$got" = "$want" ] && break
    sleep 0.5
  done
  if [ "$got" != "$want" ]; then log "FAIL clicks of $code: $got, want $want"; FAIL=1; fi
  CLICKS_TOTAL=$(( ${CLICKS_TOTAL:-0} + want ))
done
log "clicks: ${CLICKS_TOTAL:-0} redirects counted across ${#CODES[@]} links"

read -r HEAP1 GOR1 FD1 < <(measure)
log "end: heap in use $HEAP1 B, goroutines $GOR1, fds $FD1"
within() { # name start end
  local lo=$(( $2 * (100 - TOLERANCE) / 100 )) hi=$(( $2 * (100 + TOLERANCE) / 100 ))
  if (( $3 < lo || $3 > hi )); then
    log "FAIL $1: $3, start $2 (allowed $lo..$hi)"; FAIL=1
  else
    log "ok   $1: $3, start $2 (allowed $lo..$hi)"
  fi
}
within "heap in use" "$HEAP0" "$HEAP1"
within goroutines "$GOR0" "$GOR1"
within "open fds" "$FD0" "$FD1"
if grep -q '"level":"error"' "$EDGEKIT_TMP/caddy.log"; then
  log "errors in Caddy's log (last 5):"; grep '"level":"error"' "$EDGEKIT_TMP/caddy.log" | tail -5 >&2
fi
if [ "$FAIL" = 0 ]; then log "PASS"; else log "FAIL"; fi
exit "$FAIL"
