# bench_caddy.sh: the Caddy a bench script runs, and what it measures with
# (sourced after services.sh; the caller sets W, its work directory, and
# PORT and ADMIN, free ports).

CADDY_PID=""

# bench_site body: $W/Caddyfile, one site on 127.0.0.1:$PORT holding body,
# under global options that keep it quiet and apart (its own admin port and
# storage, no HTTPS, errors only in the log).
bench_site() {
  cat >"$W/Caddyfile" <<CF
{
	admin 127.0.0.1:$ADMIN
	storage file_system $W/storage
	auto_https off
	log default {
		level ERROR
	}
}
http://127.0.0.1:$PORT {
$1
}
CF
}

# start_caddy [binary]: runs it (default $CADDY_BIN, else bin/caddy) on
# $W/Caddyfile and waits until it answers on $PORT; its log goes to
# $W/caddy.log, printed when it does not start.
start_caddy() {
  XDG_DATA_HOME="$W/data" XDG_CONFIG_HOME="$W/config" "${1:-${CADDY_BIN:-bin/caddy}}" run --config "$W/Caddyfile" \
    --adapter caddyfile >"$W/caddy.log" 2>&1 &
  CADDY_PID=$!
  for _ in $(seq 1 200); do port_open "$PORT" && return 0; kill -0 "$CADDY_PID" 2>/dev/null || break; sleep 0.05; done
  echo "caddy did not start:" >&2; cat "$W/caddy.log" >&2; stop_caddy; return 1
}

stop_caddy() {
  if [ -n "$CADDY_PID" ]; then kill "$CADDY_PID" 2>/dev/null; wait "$CADDY_PID" 2>/dev/null; CADDY_PID=""; fi
}

# need_wrk: wrk, installed from apt when missing.
need_wrk() {
  command -v wrk >/dev/null || apt_install wrk || { echo "wrk is required" >&2; return 1; }
}

# redis_pid url: the pid of the Redis at url when it runs on this host (its
# CPU is read from /proc), else nothing.
redis_pid() {
  local pid
  pid=$(redis-cli -u "$1" info server 2>/dev/null | tr -d '\r' | awk -F: '$1=="process_id"{print $2}')
  [ -r "/proc/${pid:-x}/stat" ] && echo "$pid"
}
