#!/usr/bin/env bash
# make soak (not in CI): TestSoak (soak_test.go, build tag soak) for
# SOAK_DURATION (default 30m) against throwaway Redis and PostgreSQL servers
# it starts, restarts and stops itself. This script only makes sure their
# binaries are installed.
#
#   SOAK_DURATION=2m make soak
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/services.sh
need_redis_server || exit 1
[ -n "$(pg_bin_dir)" ] || { echo "soak: PostgreSQL server binaries are needed (initdb, pg_ctl)" >&2; exit 1; }
exec go test -tags soak -run '^TestSoak$' -count=1 -timeout 0 -v .
