#!/usr/bin/env bash
# make chaos: every fault-injection, failover, reload and attack scenario
# alone, verbose (make test runs them too, among the rest). Finds or
# starts Redis, a Redis Cluster and PostgreSQL (scripts/services.sh); the scenarios start
# their own throwaway servers on free ports as they need them: a Redis
# behind a fault proxy, a Sentinel group (primary, replica, three
# sentinels), a Redis Cluster of 3 masters with a replica each, and a
# PostgreSQL they stop and restart. Stops exactly what it started.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/services.sh
trap services_stop EXIT
services_start || exit 1
need_redis_server || exit 1
[ -n "$(pg_bin_dir)" ] || { echo "chaos: PostgreSQL server binaries are needed (initdb, pg_ctl)" >&2; exit 1; }
# grep only shapes the output (test names, verdicts, test logs); the exit
# status is go test's.
go test -race -count=1 -timeout 30m -run "${CHAOS_RUN:-Chaos|Attack}" -v ./... 2>&1 |
  grep --line-buffered -E '^(--- |\s+--- |PASS|FAIL|ok |panic)|_test\.go:[0-9]+:'
exit "${PIPESTATUS[0]}"
