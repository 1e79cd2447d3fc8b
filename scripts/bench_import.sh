#!/usr/bin/env bash
# make bench's import step (issue 20): BENCH_IMPORT links (default 1000000;
# 0 skips the step) written by bench/importgen as NDJSON, imported through
# `caddy shortener import --from ndjson` (a process of its own) into a running
# Caddy (a process of its own) on BENCH_IMPORT_STORE (postgres, the default:
# a fresh schema, dropped at the end; or embedded). Prints the rate and the
# peak RSS (VmHWM) of the importer and of the server, and the import's summary.
set -uo pipefail
cd "$(dirname "$0")/.."
N=${BENCH_IMPORT:-1000000}
STORE=${BENCH_IMPORT_STORE:-postgres}
[ "$N" = 0 ] && exit 0
case $STORE in postgres|embedded) ;; *) echo "BENCH_IMPORT_STORE must be postgres or embedded" >&2; exit 1;; esac

. scripts/services.sh
. scripts/bench_caddy.sh
W="$EDGEKIT_TMP/bench-import"; mkdir -p "$W"
SCHEMA=""
cleanup() {
  stop_caddy
  if [ -n "$SCHEMA" ]; then psql "$TEST_DATABASE_URL" -qAtc "DROP SCHEMA $SCHEMA CASCADE" >/dev/null 2>&1; fi
  rm -rf "$W"
  services_stop
}
trap cleanup EXIT

[ -x bin/caddy ] && [ -z "$(find . -name '*.go' -newer bin/caddy -print -quit)" ] || go build -o bin/caddy ./cmd/caddy || exit 1
go run ./bench/importgen -n "$N" -o "$W/links.ndjson" || exit 1
if [ "$STORE" = postgres ]; then
  setup_postgres || exit 1
  SCHEMA="edgekit_bench_import_$RANDOM$RANDOM"
  psql "$TEST_DATABASE_URL" -qAtc "CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public" >/dev/null 2>&1
  psql "$TEST_DATABASE_URL" -qAtc "CREATE SCHEMA $SCHEMA" || exit 1
  sep='?'; [[ $TEST_DATABASE_URL == *\?* ]] && sep='&'
  STORE_LINE="store postgres \"$TEST_DATABASE_URL${sep}search_path=$SCHEMA\""
else
  STORE_LINE="store embedded $W/links.db"
fi

PORT=$(free_port) ADMIN=$(free_port)
KEY="bench-import-key-$RANDOM$RANDOM$RANDOM"
bench_site "	shortener {
		$STORE_LINE
		base_url https://sho.rt
		api /api
		api_key $KEY
	}"
start_caddy bin/caddy || exit 1

hwm() { awk '/^VmHWM/{printf "%.1f", $2/1024}' "/proc/$1/status" 2>/dev/null; } # MiB
server_before=$(hwm "$CADDY_PID")
start=$(date +%s.%N)
SHORTENER_API="http://127.0.0.1:$PORT/api" SHORTENER_API_KEY=$KEY \
  bin/caddy shortener import --from ndjson --no-progress "$W/links.ndjson" >"$W/import.out" 2>&1 &
IMP=$!
importer=0 anon_max=0 file_max=0
while kill -0 "$IMP" 2>/dev/null; do
  v=$(hwm "$IMP"); [ -n "$v" ] && importer=$v   # VmHWM only grows: the last reading is the peak
  read -r a f < <(awk '/^RssAnon/{a=$2} /^RssFile/{f=$2} END{print a+0, f+0}' "/proc/$CADDY_PID/status")
  [ "$a" -gt "$anon_max" ] && anon_max=$a; [ "$f" -gt "$file_max" ] && file_max=$f
  sleep 0.2
done
wait "$IMP"; rc=$?
end=$(date +%s.%N)
server=$(hwm "$CADDY_PID")
# Of the server's RSS now: anonymous memory (heap, stacks) and file pages (the embedded store's bbolt file is mmapped).
split=$(awk -v am="$anon_max" -v fm="$file_max" '/^RssAnon/{a=$2} /^RssFile/{f=$2}
  END{printf "anon %.1f MiB, file %.1f MiB; sampled peaks anon %.1f MiB, file %.1f MiB", a/1024, f/1024, am/1024, fm/1024}' "/proc/$CADDY_PID/status")
secs=$(awk -v a="$start" -v b="$end" 'BEGIN{printf "%.1f", b-a}')
rate=$(awk -v n="$N" -v s="$secs" 'BEGIN{printf "%d", n/s}')
echo
echo "import of $N NDJSON links ($(du -m "$W/links.ndjson" | cut -f1) MB) into store $STORE through caddy shortener import:"
tail -n 3 "$W/import.out" | grep -v '^line ' | sed 's/^/  /'
echo "  exit $rc; ${secs}s, $rate links/s; peak RSS: importer ${importer} MiB, server ${server} MiB (${server_before} MiB before; now $split);" \
  "$(grep -c 'sending the batch again' "$W/import.out") batches sent again after a 503"
[ "$rc" = 0 ] || { head -n 20 "$W/import.out" >&2; tail -n 20 "$W/caddy.log" >&2; exit 1; }
