#!/usr/bin/env bash
# make bench: end-to-end throughput and latency of both handlers against Caddy's
# own baselines, all measured in one run with the same load generator.
#   BENCH_PIPELINE_DURATION (default 60s): case 16's run (the click pipeline keeping up)
#   BENCH_DURATION (default 10s)  BENCH_CONNECTIONS (default 64)  BENCH_CASES (default: all, e.g. "1 3 17")
#   BENCH_ROUNDS (default 1): run the cases this many times, one after another,
#   and add the median of each case's per-round ratios (this machine's
#   baseline moves by a third between runs; medians of interleaved rounds
#   move less).
# Prints a table: req/s, p50, p99 at full load, ratio to the baseline of the same
# run, and p99 at half the baseline's max rate (vegeta, constant rate).
#   BENCH_HOOK_BATCH (default 100): case 19's endpoint's batch of clicks
#   BENCH_PPROF=<dir>: keep Caddy's CPU profile of each case's run (cpu-<case>.pprof)
#   and its allocations since it started (allocs-<case>.pprof) there, with
#   wrk's report of the run (wrk-<case>.txt).
set -uo pipefail
cd "$(dirname "$0")/.."
DUR=${BENCH_DURATION:-10s}
CONNS=${BENCH_CONNECTIONS:-64}
CASES=${BENCH_CASES:-"1 2 3 4 5 17 20 21 6 7 8 9 10 11 12 14 15 18 19 16"}
RATE_DUR=${BENCH_RATE_DURATION:-5s}
ROUNDS=${BENCH_ROUNDS:-1}

. scripts/services.sh
. scripts/bench_caddy.sh
trap 'stop_caddy; services_stop' EXIT

need_wrk || exit 1
VEGETA=$(go env GOPATH)/bin/vegeta
if [ ! -x "$VEGETA" ]; then go install github.com/tsenart/vegeta/v12@v12.13.0 >&2 || { echo "vegeta is required" >&2; exit 1; }; fi
setup_redis || exit 1
REDIS_URL=$TEST_REDIS_URL
go build -o bin/caddy ./cmd/caddy || exit 1
# Case 17, issue 19's peer: a plain handler over go-redis/redis_rate, built
# from bench/redisrate (a go.mod of its own: this module does not depend on it).
if [[ " $CASES " == *" 17 "* ]]; then (cd bench/redisrate && go build -o ../../bin/caddy-redisrate .) || exit 1; fi

W="$EDGEKIT_TMP/bench"; mkdir -p "$W"
# Cases 15 and 16: a City database written here (loopback in it: every click
# is looked up), never downloaded.
go run ./bench/geoipdb -o "$W/city.mmdb" || exit 1
# Cases 20 and 21: a JWKS of one RSA key and an RS256 token it signs.
JWT_TOKEN=$(go run ./bench/jwttoken -jwks "$W/jwks.json") || exit 1
PORT=$(free_port)
ADMIN=$(free_port)
HOOK_PORT=$(free_port)
PREFIX="edgekit-bench-$RANDOM$RANDOM"
site() { bench_site "$1"; }

# A loaded 2-core box running wrk, Caddy and Redis together queues decisions for
# longer than the 10ms default: a timeout would fail open and pass requests
# undecided, which is not what we measure.
RL_REDIS="redis {
			url $REDIS_URL
			key_prefix $PREFIX
		}
		timeout 500ms
		on_error closed"
case_config() {
  CADDY_BIN=bin/caddy
  case $1 in
  1) NAME="baseline respond 200"; site "	respond 200" ;;
  2) NAME="ratelimit memory, allowed"; site "	ratelimit {
		zone z {
			key {client_ip}
			events 1000000000
			window 1s
		}
	}
	respond 200" ;;
  3) NAME="ratelimit redis, allowed"; site "	ratelimit {
		$RL_REDIS
		zone z {
			key {client_ip}
			events 1000000000
			window 1s
		}
	}
	respond 200" ;;
  4) NAME="ratelimit redis, refused"; QUOTA=1000; site "	ratelimit {
		$RL_REDIS
		zone z$RANDOM {
			key {client_ip}
			events $QUOTA
			window 1h
		}
	}
	respond 200" ;;
  5) NAME="ratelimit redis, 3 zones"; site "	ratelimit {
		$RL_REDIS
		zone a {
			key {client_ip}
			events 1000000000
			window 1s
		}
		zone b {
			key {http.request.host}
			events 1000000000
			window 1m
			algorithm sliding_window
		}
		zone c {
			key {http.request.method}
			events 1000000000
			window 1m
			algorithm fixed_window
		}
	}
	respond 200" ;;
  11) NAME="ratelimit redis, allowed, approximate 100ms"; site "	ratelimit {
		$RL_REDIS
		zone z {
			key {client_ip}
			events 1000000000
			window 1s
			approximate 100ms
		}
	}
	respond 200" ;;
  12) NAME="ratelimit redis, 3 zones, approximate 100ms"; site "	ratelimit {
		$RL_REDIS
		zone a {
			key {client_ip}
			events 1000000000
			window 1s
			approximate 100ms
		}
		zone b {
			key {http.request.host}
			events 1000000000
			window 1m
			algorithm sliding_window
			approximate 100ms
		}
		zone c {
			key {http.request.method}
			events 1000000000
			window 1m
			algorithm fixed_window
			approximate 100ms
		}
	}
	respond 200" ;;
  13) NAME="ratelimit redis, approximate, exactness"; QUOTA=1000; site "	ratelimit {
		$RL_REDIS
		zone z$RANDOM {
			key {client_ip}
			events $QUOTA
			window 1h
			approximate 100ms
		}
	}
	respond 200" ;;
  14) NAME="ratelimit redis, concurrency + token bucket"; site "	ratelimit {
		$RL_REDIS
		zone inflight {
			key {client_ip}
			events 1000000
			algorithm concurrency
		}
		zone z {
			key {client_ip}
			events 1000000000
			window 1s
		}
	}
	respond 200" ;;
  # Cases 20 and 21 (issue 38): the same request (an RS256 bearer token and an
  # X-Customer header) through a per-minute zone and a calendar month zone,
  # keyed by the header (20) or by the token's verified subject (21).
  20|21) if [ "$1" = 20 ]; then NAME="ratelimit redis, per-minute + 1mo calendar zones, keyed by a header"; KEY="{http.request.header.X-Customer}"; JWT=""
    else NAME="ratelimit redis, per-minute + 1mo calendar zones, keyed by a JWT's sub (RS256)"; KEY="{http.ratelimit.jwt.sub}"; JWT="jwt {
			jwks_file $W/jwks.json
			issuer https://login.example.com/
			audience https://api.example.com
		}"; fi
    site "	ratelimit {
		$RL_REDIS
		$JWT
		zone per_minute {
			key $KEY
			events 1000000000
			window 1m
		}
		zone monthly {
			key $KEY
			events 1000000000
			algorithm fixed_window
			window 1mo calendar
		}
	}
	respond 200" ;;
  17) NAME="peer: plain handler over go-redis/redis_rate, allowed (one EVALSHA per request)"; CADDY_BIN=bin/caddy-redisrate; site "	redis_rate $REDIS_URL 1000000000
	respond 200" ;;
  6) NAME="baseline static redir"; site "	redir /bench01 https://example.com/landing 302" ;;
  7) NAME="shortener L1 hit"; site "	shortener {
		store embedded $W/links-$1.db
		api /api
		api_key bench-key-0123456789
		clicks off
	}" ;;
  8) NAME="shortener redis hit"; site "	shortener {
		store embedded $W/links-$1.db
		redis {
			url $REDIS_URL
			key_prefix $PREFIX
		}
		local_cache off
		api /api
		api_key bench-key-0123456789
		clicks off
	}" ;;
  9) NAME="shortener negative hit"; site "	shortener {
		store embedded $W/links-$1.db
		api /api
		api_key bench-key-0123456789
		clicks off
	}" ;;
  10) NAME="shortener L1 hit, clicks on"; site "	shortener {
		store embedded $W/links-$1.db
		api /api
		api_key bench-key-0123456789
	}" ;;
  15) NAME="shortener L1 hit, clicks on, browser UA (parsed, visitor hashed), GeoIP"; site "	shortener {
		store embedded $W/links-$1.db
		clicks_geoip $W/city.mmdb
		api /api
		api_key bench-key-0123456789
	}" ;;
  18) NAME="shortener L1 hit, clicks on, browser UA, GeoIP, 10 rules (device, OS, browser, country, language; the last matches)"; site "	shortener {
		store embedded $W/links-$1.db
		clicks_geoip $W/city.mmdb
		api /api
		api_key bench-key-0123456789
	}" ;;
  19) NAME="shortener L1 hit, clicks on, a webhook on click, batches of 100 (its receiver a site of the same Caddy)"; site "	shortener {
		store embedded $W/links-$1.db
		api /api
		api_key bench-key-0123456789
		webhooks {
			allow_private 127.0.0.0/8
		}
	}"
    printf 'http://127.0.0.1:%s {\n\trespond 204\n}\n' "$HOOK_PORT" >>"$W/Caddyfile" ;;
  16) NAME="shortener L1 hit, clicks on, GeoIP, Redis stream, 1,000 UAs Zipf"; site "	shortener {
		store embedded $W/links-$1.db
		clicks_geoip $W/city.mmdb
		redis {
			url $REDIS_URL
			key_prefix $PREFIX-clicks
		}
		api /api
		api_key bench-key-0123456789
	}" ;;
  esac
}

# target path per case
case_path() {
  case $1 in
  6|7|8|10|15|16|18|19) echo /bench01 ;;
  *) echo / ;;
  esac
}

prepare() {
  local body='{"long_url":"https://example.com/landing","code":"bench01"}'
  case $1 in
  20|21) # the token verifies and keys (200); case 21 refuses a request without it (401)
    [ "$(curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $JWT_TOKEN" -H 'X-Customer: alice' "http://127.0.0.1:$PORT/")" = 200 ] || return 1
    [ "$1" = 20 ] || [ "$(curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/")" = 401 ]
    return ;;
  esac
  [ "$1" = 18 ] && body=$(ten_rules)
  case $1 in
  7|8|10|15|16|18|19) # 201 the first time, 409 when the case's store already has it
    local st
    st=$(curl -sS -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer bench-key-0123456789' -H 'Content-Type: application/json' \
      -d "$body" "http://127.0.0.1:$PORT/api/links")
    [ "$st" = 201 ] || [ "$st" = 409 ] || return 1
    [ "$1" = 19 ] && { webhook_endpoint || return 1; }
    return 0 ;;
  esac
}

# Case 19's endpoint: one, on click, made once per store.
webhook_endpoint() {
  local auth='Authorization: Bearer bench-key-0123456789'
  curl -sS -H "$auth" "http://127.0.0.1:$PORT/api/webhooks" | grep -q '"id"' && return 0
  [ "$(curl -sS -o /dev/null -w '%{http_code}' -H "$auth" -H 'Content-Type: application/json' \
    -d "{\"url\":\"http://127.0.0.1:$HOOK_PORT/hook\",\"types\":[\"click\"],\"batch\":${BENCH_HOOK_BATCH:-100},\"batch_wait_ms\":1000}" "http://127.0.0.1:$PORT/api/webhooks")" = 201 ]
}

# Case 18's link: ten rules on device, OS, browser, country and language;
# the first nine fail only on their language, the last matches case 18's
# visitor (Chrome on Windows, loopback: DE in the bench's GeoIP file,
# Accept-Language BENCH_AL), so every condition of every rule is read.
BENCH_AL="de-DE,de;q=0.9,en;q=0.8"
ten_rules() {
  local rules="" i lang
  i=0
  for lang in fr it es pt nl sv pl ja ko; do
    rules+="{\"if\":{\"device\":[\"desktop\"],\"os\":[\"windows\"],\"browser\":[\"chrome\"],\"country\":[\"DE\",\"AT\"],\"language\":[\"$lang\"]},\"url\":\"https://example.com/r$i\"},"
    i=$((i + 1))
  done
  rules+='{"name":"de","if":{"device":["desktop"],"os":["windows"],"browser":["chrome"],"country":["DE","AT"],"language":["de"]},"url":"https://example.com/de"}'
  printf '{"long_url":"https://example.com/landing","code":"bench01","rules":[%s]}' "$rules"
}

# Case 9: 1000 random codes that no link has, requested over and over, as a
# scanning bot does; after the first miss each is a negative cache hit.
UNKNOWN=$(awk 'BEGIN{srand(); s="0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"; for(i=0;i<1000;i++){c=""; for(j=0;j<7;j++){c=c substr(s,int(rand()*62)+1,1)}; print c}}')
{
  echo 'local codes = {'
  for u in $UNKNOWN; do printf '"%s",' "$u"; done
  echo '}'
  # Requests are formatted once per thread, so the load generator costs
  # about what it costs on a fixed path (the baseline's).
  echo 'local reqs = {}'
  echo 'init = function() for i, c in ipairs(codes) do reqs[i] = wrk.format("GET", "/" .. c) end end'
  echo 'request = function() return reqs[math.random(1, #reqs)] end'
} >"$W/random.lua"

# Cases 15 and 16: a browser's user agent (parsed into device, OS and
# browser, and hashed with the address into the visitor, by the writer);
# case 16 picks one of 1,000 distinct user agents per request, the k-th
# with weight 1/k (Zipf, s = 1), as real traffic repeats a few browsers.
BENCH_UA="Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
cat >"$W/zipf.lua" <<'LUA'
local n, reqs, cum = 1000, {}, {}
local function ua(i)
  local v = 60 + i % 70
  local f = i % 4
  if f == 0 then return string.format("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/%d.0.%d.0 Safari/537.36", v, i) end
  if f == 1 then return string.format("Mozilla/5.0 (X11; Linux x86_64; rv:%d.0) Gecko/20100101 Firefox/%d.%d", v, v, i) end
  if f == 2 then return string.format("Mozilla/5.0 (iPhone; CPU iPhone OS 17_%d like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.%d Mobile/15E148 Safari/604.1", i % 7, i) end
  return string.format("Mozilla/5.0 (Linux; Android %d; SM-S9%03d) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/%d.0.0.0 Mobile Safari/537.36", 10 + i % 5, i, v)
end
init = function()
  local total = 0
  for i = 1, n do
    total = total + 1 / i
    cum[i] = total
    reqs[i] = wrk.format("GET", "/bench01", {["User-Agent"] = ua(i)})
  end
  for i = 1, n do cum[i] = cum[i] / total end
end
request = function()
  local r, lo, hi = math.random(), 1, n
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if cum[mid] < r then lo = mid + 1 else hi = mid end
  end
  return reqs[lo]
end
LUA

to_ms() { # wrk latency like 1.23ms / 456.00us / 1.01s -> ms
  awk -v v="$1" 'BEGIN{ if (v ~ /us$/) {sub(/us$/,"",v); printf "%.3f", v/1000} else if (v ~ /ms$/) {sub(/ms$/,"",v); printf "%.3f", v} else if (v ~ /s$/) {sub(/s$/,"",v); printf "%.3f", v*1000} else print v }'
}

# CPU time (utime + stime, in clock ticks) a process has used so far.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
TICK=$(getconf CLK_TCK)
# Redis' pid when it runs on this host (its CPU counts for the Redis cases).
REDIS_PID=$(redis_pid "$REDIS_URL")

declare -A RPS P50 P99 NAMES CPU CCPU RCPU

# The click stream of case 16: its length, and its consumer group's pending
# entries and lag (entries appended but not yet delivered to a consumer).
stream_state() {
  local key="$PREFIX-clicks:clicks"
  redis-cli -u "$REDIS_URL" xinfo groups "$key" 2>/dev/null | tr -d '\r' |
    awk -v len="$(redis-cli -u "$REDIS_URL" xlen "$key" | tr -d '\r')" '{a[NR]=$0} END{for(i=1;i<NR;i+=2){if(a[i]=="pending")p=a[i+1]; if(a[i]=="lag")l=a[i+1]} printf "xlen=%s pending=%s lag=%s", len, p, l}'
}

# After case 16's run: the stream at start, every 10 s and at the end, then
# whether every redirect was counted once the writer and consumer caught up.
pipeline_report() {
  local reqs want counted dropped
  reqs=$(awk '/requests in/{s+=$1} END{print s}' "$W/wrk-warm-$1.txt" "$W/wrk-$1.txt")
  PIPE_END=$(stream_state)
  for _ in $(seq 1 100); do
    counted=$(curl -sS -H 'Authorization: Bearer bench-key-0123456789' "http://127.0.0.1:$PORT/api/links/bench01" | sed -E 's/.*"clicks":([0-9]+).*/\1/')
    [ "${counted:-0}" -ge "$reqs" ] 2>/dev/null && break
    sleep 0.1
  done
  dropped=$(curl -sS "http://127.0.0.1:$ADMIN/metrics" | awk '/^caddy_shortener_clicks_dropped_total/{s+=$2} END{print s+0}')
  {
    echo "pipeline (case 16, ${BENCH_PIPELINE_DURATION:-60s} at full rate, 1,000 user agents, Zipf): stream at start $PIPE_START"
    cat "$W/pipeline-samples.txt"
    echo "  end      $PIPE_END; $(stream_state) after $(( SECONDS - PIPE_T0 ))s"
    echo "  redirects answered to wrk $reqs (warm-up included; a few more were sent as wrk stopped), counted $counted, dropped $dropped"
  } | tee "$W/pipeline.txt"
}
# Case 19: webhook messages delivered so far (each carries up to BENCH_HOOK_BATCH clicks).
hooks_delivered() {
  curl -sS "http://127.0.0.1:$ADMIN/metrics" | awk '/^caddy_shortener_webhook_attempts_total\{outcome="delivered"\}/{s+=$2} END{print s+0}'
}
# hooks_report DELIVERED_BEFORE REQUESTS: what case 19's run delivered; a run
# that delivered less than half its clicks measured no webhook and says so.
hooks_report() {
  local n=$(( $(hooks_delivered) - $1 ))
  if [ $(( n * ${BENCH_HOOK_BATCH:-100} * 2 )) -lt "$2" ]; then
    echo "  case 19: only $n webhook messages delivered for $2 clicks: this round measured no webhook" >&2
  else
    echo "  case 19: $n webhook messages delivered for $2 clicks" >&2
  fi
}
# per_req TICKS REQUESTS: CPU µs per request.
per_req() { awk -v t="$1" -v hz="$TICK" -v n="$2" 'BEGIN{ if (n>0) printf "%.1f", t*1e6/hz/n; else print "-" }'; }
run_case() {
  local c=$1 path script=()
  case_config "$c"; NAMES[$c]=$NAME
  start_caddy || return 1
  prepare "$c" || { echo "prepare failed for case $c" >&2; cat "$W/caddy.log" >&2; stop_caddy; return 1; }
  path=$(case_path "$c")
  [ "$c" = 9 ] && script=(-s "$W/random.lua")
  [ "$c" = 15 ] && script=(-H "User-Agent: $BENCH_UA")
  [ "$c" = 18 ] && script=(-H "User-Agent: $BENCH_UA" -H "Accept-Language: $BENCH_AL")
  [ "$c" = 16 ] && script=(-s "$W/zipf.lua")
  [ "$c" = 20 ] || [ "$c" = 21 ] && script=(-H "Authorization: Bearer $JWT_TOKEN" -H "X-Customer: alice")
  local dur=$DUR
  [ "$c" = 16 ] && dur=${BENCH_PIPELINE_DURATION:-60s}
  wrk -t2 -c"$CONNS" -d2s "${script[@]}" "http://127.0.0.1:$PORT$path" >"$W/wrk-warm-$c.txt" 2>&1  # warm up
  local c0 r0 c1 r1 total sampler=""
  if [ "$c" = 16 ]; then
    PIPE_START=$(stream_state); PIPE_T0=$SECONDS
    (for _ in $(seq 1 "$(( ${dur%s} / 10 ))"); do sleep 10; echo "  t+$(( SECONDS - PIPE_T0 ))s $(stream_state)"; done) >"$W/pipeline-samples.txt" &
    sampler=$!
  fi
  local h0=0; [ "$c" = 19 ] && h0=$(hooks_delivered)
  c0=$(cpu_ticks "$CADDY_PID"); r0=0; [ -n "$REDIS_PID" ] && r0=$(cpu_ticks "$REDIS_PID")
  local prof=""
  if [ -n "${BENCH_PPROF:-}" ]; then # Caddy's CPU profile of the run, for go tool pprof
    curl -sS -o "$BENCH_PPROF/cpu-$c.pprof" "http://127.0.0.1:$ADMIN/debug/pprof/profile?seconds=$(( ${dur%s} - 1 ))" &
    prof=$!
  fi
  wrk -t2 -c"$CONNS" -d"$dur" --latency "${script[@]}" "http://127.0.0.1:$PORT$path" >"$W/wrk-$c.txt" 2>&1
  c1=$(cpu_ticks "$CADDY_PID"); r1=0; [ -n "$REDIS_PID" ] && r1=$(cpu_ticks "$REDIS_PID")
  [ -n "$sampler" ] && { kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null; pipeline_report "$c"; }
  [ -n "$prof" ] && { wait "$prof"; curl -sS -o "$BENCH_PPROF/allocs-$c.pprof" "http://127.0.0.1:$ADMIN/debug/pprof/allocs"; cp "$W/wrk-$c.txt" "$BENCH_PPROF/"
    echo "  profiles: $BENCH_PPROF/cpu-$c.pprof, allocs-$c.pprof (since Caddy started)" >&2; }
  total=$(awk '/requests in/{print $1}' "$W/wrk-$c.txt")
  [ "$c" = 19 ] && hooks_report "$h0" "$total"
  # Server CPU per request: Caddy's, plus Redis' when Redis is local
  # (the other Redis clients of this host are idle during the run).
  CPU[$c]=$(per_req $(( (c1 - c0) + (r1 - r0) )) "$total")
  CCPU[$c]=$(per_req $(( c1 - c0 )) "$total")
  RCPU[$c]=$(per_req $(( r1 - r0 )) "$total")
  RPS[$c]=$(awk '/^Requests\/sec/{print $2}' "$W/wrk-$c.txt")
  P50[$c]=$(to_ms "$(awk '$1=="50%"{print $2}' "$W/wrk-$c.txt")")
  P99[$c]=$(to_ms "$(awk '$1=="99%"{print $2}' "$W/wrk-$c.txt")")
  stop_caddy
}

# Calls of the commands a client sends: for the rate limiter its Lua calls
# (FCALL, EVALSHA, EVAL), each one whatever it runs inside (INFO
# commandstats counts those too); for the shortener (case 8), which sends
# no Lua, its plain commands.
redis_cmdstats() { # scripts|plain
  redis-cli -u "$REDIS_URL" info commandstats | tr -d '\r' | awk -F'[:=,]' -v kind="$1" '/^cmdstat_[a-z]+:/{n[$1]=$3}
    END{lua=n["cmdstat_fcall"]+n["cmdstat_evalsha"]+n["cmdstat_eval"]; plain=n["cmdstat_get"]+n["cmdstat_set"]+n["cmdstat_del"]+n["cmdstat_publish"]+n["cmdstat_xadd"]
      print (kind=="plain" ? plain : lua)+0}'
}
calls_kind() { [ "$1" = 8 ] && echo plain || echo scripts; }
# Lua calls and the µs Redis spent in them: "calls usec".
redis_luatime() {
  redis-cli -u "$REDIS_URL" info commandstats | tr -d '\r' | awk -F'[:=,]' '/^cmdstat_(fcall|evalsha|eval):/{c+=$3; u+=$5} END{print c+0, u+0}'
}

echo "# make bench: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, wrk -t2 -c$CONNS -d$DUR, Caddy $(bin/caddy version | awk '{print $1}')"
# ratio_of case rps|cpu: the case against its baseline (1 or 6) of the same round.
ratio_of() {
  local c=$1 ref
  case $c in 6|7|8|9|10|15|16|18|19) ref=6 ;; *) ref=1 ;; esac
  if [ "$2" = rps ]; then
    awk -v a="${RPS[$c]:-0}" -v b="${RPS[$ref]:-0}" 'BEGIN{ if (a>0 && b>0) printf "%.2f", a/b; else print "-" }'
  else
    awk -v a="${CPU[$c]:-0}" -v b="${CPU[$ref]:-0}" 'BEGIN{ if (a>0 && b>0) printf "%.2f", b/a; else print "-" }'
  fi
}
# spread: "median (min–max)" of the numbers on stdin.
spread() { tr ' ' '\n' | grep -v '^-*$' | sort -n | awk '{a[NR]=$1} END{ if (NR==0) {print "-"; exit}; m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.1f (%s–%s)", m, a[1], a[NR] }'; }
median() { tr ' ' '\n' | grep -v '^-*$' | sort -n | awk '{a[NR]=$1} END{ if (NR==0) print "-"; else if (NR%2) print a[(NR+1)/2]; else printf "%.2f", (a[NR/2]+a[NR/2+1])/2 }'; }
declare -A RATIOS CRATIOS CCPUS RCPUS
T_RATIOS="" T_CRATIOS="" # case 18 against case 15, per round
H_RATIOS="" H_CRATIOS="" # case 19 against case 10, per round
J_RATIOS="" J_CRATIOS="" # case 21 against case 20, per round
for round in $(seq 1 "$ROUNDS"); do
  for c in $CASES; do run_case "$c" || exit 1; done
  for c in $CASES; do
    RATIOS[$c]+=" $(ratio_of "$c" rps)"; CRATIOS[$c]+=" $(ratio_of "$c" cpu)"
    CCPUS[$c]+=" ${CCPU[$c]}"; RCPUS[$c]+=" ${RCPU[$c]}"
  done
  if [ -n "${RPS[10]:-}" ] && [ -n "${RPS[19]:-}" ]; then
    H_RATIOS+=" $(awk -v a="${RPS[19]}" -v b="${RPS[10]}" 'BEGIN{printf "%.2f", a/b}')"
    H_CRATIOS+=" $(awk -v a="${CPU[19]}" -v b="${CPU[10]}" 'BEGIN{ if (a>0) printf "%.2f", b/a; else print "-" }')"
  fi
  if [ -n "${RPS[15]:-}" ] && [ -n "${RPS[18]:-}" ]; then
    T_RATIOS+=" $(awk -v a="${RPS[18]}" -v b="${RPS[15]}" 'BEGIN{printf "%.2f", a/b}')"
    T_CRATIOS+=" $(awk -v a="${CPU[18]}" -v b="${CPU[15]}" 'BEGIN{ if (a>0) printf "%.2f", b/a; else print "-" }')"
  fi
  if [ -n "${RPS[20]:-}" ] && [ -n "${RPS[21]:-}" ]; then
    J_RATIOS+=" $(awk -v a="${RPS[21]}" -v b="${RPS[20]}" 'BEGIN{printf "%.2f", a/b}')"
    J_CRATIOS+=" $(awk -v a="${CPU[21]}" -v b="${CPU[20]}" 'BEGIN{ if (a>0) printf "%.2f", b/a; else print "-" }')"
  fi
  [ "$ROUNDS" -gt 1 ] && echo "round $round: ratios$(for c in $CASES; do printf ' %s=%s' "$c" "$(ratio_of "$c" rps)"; done)"
done

# Exactness under load: a fresh quota of 1000/1h hammered with the same load;
# allowed must be exactly 1000 (plus what refills meanwhile), exact (case 4's
# zone) and approximate (one instance: exact as well).
for c in 4 11; do
  [[ " $CASES " == *" $c "* ]] || continue
  QUOTA=1000
  [ "$c" = 4 ] && case_config 4 || case_config 13
  start_caddy || exit 1
  before=$(redis_cmdstats scripts)
  wrk -t2 -c"$CONNS" -d5s "http://127.0.0.1:$PORT/" >"$W/wrk-exact.txt" 2>&1
  after=$(redis_cmdstats scripts)
  total=$(awk '/requests in/{print $1}' "$W/wrk-exact.txt")
  non2xx=$(awk '/Non-2xx/{print $NF}' "$W/wrk-exact.txt"); non2xx=${non2xx:-0}
  stop_caddy
  echo "exactness ($NAME): quota $QUOTA, requests $total, allowed $((total - non2xx)), refused $non2xx; Redis Lua calls: $((after - before)) ($(awk -v a=$((after-before)) -v t="$total" 'BEGIN{printf "%.3f", a/t}') per request)"
done

# Redis commands per decision (allowed) and per redirect (redis hit); case
# 14 gives its leases back in batched script calls
for c in 3 11 14 8; do
  [[ " $CASES " == *" $c "* ]] || continue
  case_config "$c"; start_caddy || exit 1; prepare "$c"
  before=$(redis_cmdstats "$(calls_kind "$c")")
  wrk -t2 -c"$CONNS" -d3s "http://127.0.0.1:$PORT$(case_path "$c")" >"$W/wrk-cmd-$c.txt" 2>&1
  after=$(redis_cmdstats "$(calls_kind "$c")")
  total=$(awk '/requests in/{print $1}' "$W/wrk-cmd-$c.txt")
  stop_caddy
  echo "redis calls per request (Lua calls; the shortener's plain commands), ${NAMES[$c]}: $(awk -v a=$((after-before)) -v t="$total" 'BEGIN{printf "%.3f", a/t}')"
done

# One connection (issue 19): the latency an exact decision adds to respond,
# against one Redis round trip (PING's p50) plus the call's own time in
# Redis (INFO commandstats during the run, where each call decides one
# request).
if [[ " $CASES " == *" 1 "* && " $CASES " == *" 3 "* ]]; then
  declare -A ONE
  for c in 1 3; do
    case_config "$c"; start_caddy || exit 1
    wrk -t1 -c1 -d1s "http://127.0.0.1:$PORT/" >/dev/null 2>&1
    read -r lc0 lu0 <<<"$(redis_luatime)"
    wrk -t1 -c1 -d3s --latency "http://127.0.0.1:$PORT/" >"$W/wrk-one-$c.txt" 2>&1
    read -r lc1 lu1 <<<"$(redis_luatime)"
    stop_caddy
    ONE[$c]=$(to_ms "$(awk '$1=="50%"{print $2}' "$W/wrk-one-$c.txt")")
  done
  ping=$(redis-benchmark -u "$REDIS_URL" -c 1 -n 20000 -q -t ping 2>/dev/null | tr '\r' '\n' | awk -F'p50=' '/PING_MBULK/ && NF > 1 {v = $2 + 0} END{print v + 0}')
  awk -v a="${ONE[1]}" -v b="${ONE[3]}" -v p="${ping:-0}" -v c=$((lc1 - lc0)) -v u=$((lu1 - lu0)) 'BEGIN{
    lua = (c > 0) ? u / c / 1000 : 0
    printf "one connection (wrk -t1 -c1, p50): respond %.3f ms, exact Redis zone %.3f ms, added %.3f ms; one Redis round trip %.3f ms (PING %.3f + the call in Redis %.3f); added - round trip = %.3f ms (target <= 0.030)\n", a, b, b - a, p + lua, p, lua, b - a - p - lua }'
fi

# p99 at half the baseline's max rate (constant rate)
base=${RPS[1]:-}
if [ -n "$base" ]; then
  RATE=$(awk -v r="$base" 'BEGIN{printf "%d", r/2}')
  declare -A RP99
  for c in $CASES; do
    case_config "$c"; start_caddy || exit 1; prepare "$c"
    path=$(case_path "$c")
    if [ "$c" = 9 ]; then
      for u in $UNKNOWN; do printf 'GET http://127.0.0.1:%s/%s\n\n' "$PORT" "$u"; done >"$W/targets.txt"
    elif [ "$c" = 20 ] || [ "$c" = 21 ]; then
      printf 'GET http://127.0.0.1:%s%s\nAuthorization: Bearer %s\nX-Customer: alice\n' "$PORT" "$path" "$JWT_TOKEN" >"$W/targets.txt"
    else
      printf 'GET http://127.0.0.1:%s%s\n' "$PORT" "$path" >"$W/targets.txt"
    fi
    "$VEGETA" attack -targets="$W/targets.txt" -rate="$RATE" -duration="$RATE_DUR" -redirects=-1 -keepalive=true -workers="$CONNS" -max-workers="$CONNS" -connections="$CONNS" >"$W/vegeta-$c.bin" 2>/dev/null
    RP99[$c]=$("$VEGETA" report -type=json <"$W/vegeta-$c.bin" | sed -E 's/.*"99th":([0-9]+).*/\1/' | awk '{printf "%.3f", $1/1e6}')
    stop_caddy
  done
fi

MED_HEAD="" MED_SEP=""
[ "$ROUNDS" -gt 1 ] && MED_HEAD=" median ratio ($ROUNDS rounds) | median CPU ratio | Caddy CPU µs/req, median (min–max) | Redis CPU µs/req, median (min–max) |" MED_SEP="---:|---:|---:|---:|"
printf '\n| # | case | req/s | p50 ms | p99 ms | ratio | p99 ms @ %s req/s | Caddy CPU µs/req | Redis CPU µs/req | CPU ratio |%s\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|%s\n' "${RATE:-?}" "$MED_HEAD" "$MED_SEP"
for c in $CASES; do
  med=""
  [ "$ROUNDS" -gt 1 ] && med=" $(echo ${RATIOS[$c]} | median) | $(echo ${CRATIOS[$c]} | median) | $(echo ${CCPUS[$c]} | spread) | $(echo ${RCPUS[$c]} | spread) |"
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |%s\n' "$c" "${NAMES[$c]}" "${RPS[$c]}" "${P50[$c]}" "${P99[$c]}" "$(ratio_of "$c" rps)" "${RP99[$c]:-}" "${CCPU[$c]}" "${RCPU[$c]}" "$(ratio_of "$c" cpu)" "$med"
done
echo "ratios: cases 2-5, 11-12, 14, 17, 20 and 21 against case 1 (respond), cases 7-10, 15, 16, 18 and 19 against case 6 (static redir)"
[ -n "$T_RATIOS" ] && echo "targeting: case 18 (10 rules) against case 15 (the same L1 hit without rules): req/s ratio $(echo $T_RATIOS | median) (rounds:$T_RATIOS), CPU ratio $(echo $T_CRATIOS | median) (rounds:$T_CRATIOS); issue 35 asks >= 0.85"
[ -n "$J_RATIOS" ] && echo "jwt: case 21 (keyed by a verified RS256 JWT) against case 20 (the same request keyed by a header): req/s ratio $(echo $J_RATIOS | median) (rounds:$J_RATIOS), CPU ratio $(echo $J_CRATIOS | median) (rounds:$J_CRATIOS); issue 38 asks >= 0.9"
[ -n "$H_RATIOS" ] && echo "webhooks: case 19 (a webhook on click) against case 10 (clicks without webhooks): req/s ratio $(echo $H_RATIOS | median) (rounds:$H_RATIOS), CPU ratio $(echo $H_CRATIOS | median) (rounds:$H_CRATIOS); issue 36 asks >= 0.95"
[ -f "$W/pipeline.txt" ] && cat "$W/pipeline.txt"
echo "CPU: Caddy's and the local Redis' CPU time per request during the wrk run$([ -n "$REDIS_PID" ] && echo " (Redis pid $REDIS_PID)" || echo " (Redis not local: not measured)"); CPU ratio = the baseline's CPU per request / the case's, Caddy's and Redis' together (1.00: costs what the baseline costs)"

# Listing, search and export of links at 100,000 and 1,000,000 links in
# PostgreSQL (bench/links; a fresh schema, dropped at the end; ~10 minutes).
# BENCH_LINKS (default 1000000) sets the last size; BENCH_LINKS=0 skips it.
if [ "${BENCH_LINKS:-1000000}" != 0 ]; then
  setup_postgres || exit 1
  echo
  go run ./bench/links -dsn "$TEST_DATABASE_URL" -links "${BENCH_LINKS:-1000000}"
fi
