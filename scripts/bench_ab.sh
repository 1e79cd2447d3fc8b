#!/usr/bin/env bash
# bench_ab.sh BIN... : two or more Caddy binaries side by side (A/B), the
# way issue 19's changes were judged: each round runs every case on every
# binary, one after another, and the summary gives per binary and case the
# median (min–max) over the rounds of req/s, Caddy CPU µs per request (user
# and system apart), the local Redis' and the load generator's (wrk's) CPU
# µs per request: on one machine the three share its cores.
#   BENCH_AB_CASES (default "respond exact"): respond, memory, exact, three,
#     refused (make bench's cases 1, 2, 3, 5 and 4)
#   BENCH_AB_ROUNDS (default 5)  BENCH_AB_DURATION (default 6s)
#   BENCH_CONNECTIONS (default 64)
# Build the binaries first, e.g. git worktree + go build -o /tmp/a ./cmd/caddy.
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 caddy-binary..." >&2; exit 2; }
CASES=${BENCH_AB_CASES:-"respond exact"}
ROUNDS=${BENCH_AB_ROUNDS:-5}
DUR=${BENCH_AB_DURATION:-6s}
CONNS=${BENCH_CONNECTIONS:-64}

. scripts/services.sh
. scripts/bench_caddy.sh
trap 'stop_caddy; services_stop' EXIT
need_wrk || exit 1
setup_redis || exit 1
REDIS_PID=$(redis_pid "$TEST_REDIS_URL")
W="$EDGEKIT_TMP/bench-ab"; mkdir -p "$W"
PORT=$(free_port)
ADMIN=$(free_port)
TICK=$(getconf CLK_TCK)

# zone name key events window [algorithm]
zone() {
  printf '\t\tzone %s {\n\t\t\tkey %s\n\t\t\tevents %s\n\t\t\twindow %s\n' "$1" "$2" "$3" "$4"
  [ -n "${5:-}" ] && printf '\t\t\talgorithm %s\n' "$5"
  printf '\t\t}\n'
}
redis_block() {
  printf '\t\tredis {\n\t\t\turl %s\n\t\t\tkey_prefix %s\n\t\t}\n\t\ttimeout 500ms\n\t\ton_error closed\n' "$TEST_REDIS_URL" "$1"
}
# handler case prefix: the site's handlers
handler() {
  case $1 in
    respond) ;;
    memory) printf '\tratelimit {\n%s\n\t}\n' "$(zone z '{client_ip}' 1000000000 1s)" ;;
    exact) printf '\tratelimit {\n%s\n%s\n\t}\n' "$(redis_block "$2")" "$(zone z '{client_ip}' 1000000000 1s)" ;;
    three) printf '\tratelimit {\n%s\n%s\n%s\n%s\n\t}\n' "$(redis_block "$2")" "$(zone a '{client_ip}' 1000000000 1s)" \
      "$(zone b '{http.request.host}' 1000000000 1m sliding_window)" "$(zone c '{http.request.method}' 1000000000 1m fixed_window)" ;;
    refused) printf '\tratelimit {\n%s\n%s\n\t}\n' "$(redis_block "$2")" "$(zone z '{client_ip}' 1000 1h)" ;;
    *) echo "unknown case $1 (respond, memory, exact, three, refused)" >&2; return 1 ;;
  esac
  printf '\trespond 200\n'
}

for c in $CASES; do handler "$c" x >/dev/null || exit 2; done

ticks() { awk -v f="$2" '{print $f}' "/proc/$1/stat"; } # pid field: 14 user, 15 system

# run bin case: one line "bin case rps user sys redis wrk" (µs per request)
run() {
  local bin=$1 c=$2 prefix="edgekit-ab-$RANDOM$RANDOM"
  bench_site "$(handler "$c" "$prefix")"
  start_caddy "$bin" || return 1
  wrk -t2 -c"$CONNS" -d2s "http://127.0.0.1:$PORT/" >/dev/null 2>&1 # warm up
  local u0 s0 r0=0 u1 s1 r1=0
  u0=$(ticks "$CADDY_PID" 14); s0=$(ticks "$CADDY_PID" 15); [ -n "$REDIS_PID" ] && r0=$(($(ticks "$REDIS_PID" 14) + $(ticks "$REDIS_PID" 15)))
  # the subshell's waited-for children's CPU (cutime + cstime) is wrk's
  local dw
  dw=$(wrk -t2 -c"$CONNS" -d"$DUR" "http://127.0.0.1:$PORT/" >"$W/wrk.txt" 2>&1; awk '{print $16 + $17}' "/proc/$BASHPID/stat")
  u1=$(ticks "$CADDY_PID" 14); s1=$(ticks "$CADDY_PID" 15); [ -n "$REDIS_PID" ] && r1=$(($(ticks "$REDIS_PID" 14) + $(ticks "$REDIS_PID" 15)))
  stop_caddy
  redis-cli -u "$TEST_REDIS_URL" --scan --pattern "$prefix*" | xargs -r -n 500 redis-cli -u "$TEST_REDIS_URL" del >/dev/null
  awk -v b="$bin" -v c="$c" -v hz="$TICK" -v du=$((u1 - u0)) -v ds=$((s1 - s0)) -v dr=$((r1 - r0)) -v dw="$dw" '
    /requests in/ {n = $1} /^Requests\/sec/ {rps = $2}
    END { if (n == 0) exit 1; k = 1e6 / hz / n
      printf "%s %s %.0f %.1f %.1f %.1f %.1f\n", b, c, rps, du * k, ds * k, dr * k, dw * k }' "$W/wrk.txt"
}

: >"$W/rounds.txt"
for round in $(seq 1 "$ROUNDS"); do
  for c in $CASES; do
    for bin in "$@"; do
      line=$(run "$bin" "$c") || { echo "$bin $c failed" >&2; exit 1; }
      echo "round $round: $line" | awk '{printf "%s %s %-28s %-8s %8s req/s  user %5s  sys %5s  redis %5s  wrk %5s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9}'
      echo "$line" >>"$W/rounds.txt"
    done
  done
done

echo
echo "medians (min–max) of $ROUNDS rounds, µs of CPU per request; wrk -t2 -c$CONNS -d$DUR"
# col bin case column format: "median (min–max)" of one column of the rounds
col() {
  awk -v b="$1" -v c="$2" -v f="$3" '$1 == b && $2 == c {print $f}' "$W/rounds.txt" | sort -n |
    awk -v fmt="$4" '{a[NR] = $1} END { m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
      printf fmt " (" fmt "–" fmt ")", m, a[1], a[NR] }'
}
printf '| binary | case | req/s | Caddy user | Caddy system | Redis | wrk |\n|---|---|---:|---:|---:|---:|---:|\n'
for bin in "$@"; do
  for c in $CASES; do
    printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$bin" "$c" "$(col "$bin" "$c" 3 %.0f)" "$(col "$bin" "$c" 4 %.1f)" \
      "$(col "$bin" "$c" 5 %.1f)" "$(col "$bin" "$c" 6 %.1f)" "$(col "$bin" "$c" 7 %.1f)"
  done
done
