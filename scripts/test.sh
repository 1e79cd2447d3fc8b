#!/usr/bin/env bash
# make test: find or start Redis, a Redis Cluster and PostgreSQL, then vet and
# run every test with the race detector. Stops exactly what it started.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/services.sh
trap services_stop EXIT
services_start || exit 1
echo "TEST_REDIS_URL=$TEST_REDIS_URL TEST_REDIS_CLUSTER=${TEST_REDIS_CLUSTER:-} TEST_DATABASE_URL=${TEST_DATABASE_URL:-}" | sed -E 's#://([^:@/ ]+):[^@/ ]*@#://\1:xxxxx@#g'
set -e
# step NAME CMD...: runs CMD and prints how long it took, so that each
# issue sees what its tests cost in CI.
step() {
  local name=$1 start=$SECONDS
  shift
  echo "== $name"
  "$@"
  echo "== $name: $((SECONDS - start))s"
}
tidy() { go mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy" >&2; return 1; }; }
staticcheck() {
  local bin
  bin=$(go env GOPATH)/bin/staticcheck
  [ -x "$bin" ] || go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
  GOFLAGS="${GOFLAGS:+$GOFLAGS }-race" "$bin" ./...
}
step "go mod tidy" tidy
# vet and staticcheck type-check the race build, the one go test -race
# compiles: one cold compile of every package instead of two (a plain and
# a race one).
step "go vet" go vet -race ./...
step staticcheck staticcheck
# The API document, linted by an independent linter (Redocly CLI, every
# warning an error); the document's agreement with the server is checked
# by the shortener's tests (openapi_check_test.go).
step "openapi lint" bash scripts/openapi_lint.sh
# The alert rules in deploy/prometheus: promtool check rules and their
# unit tests (promtool test rules). promtool (Debian's prometheus) is
# installed when missing; under CI=true failing to get it fails the run,
# elsewhere the step skips and says why. Failing rules or tests fail it.
alert_rules() {
  . scripts/promtool.sh
  if ! promtool_setup; then
    [ "${CI:-}" != true ] || return 1
    echo "promtool: skipped: no promtool (see above)"
    return 0
  fi
  promtool_run
}
step "alert rules" alert_rules
# The dashboard's browser tests (TestUIBrowser) need Chromium and
# playwright-core: installed when missing; under CI=true failing to get
# them fails the run, elsewhere those tests skip and say why.
browser() { . scripts/browser.sh && browser_setup || [ "${CI:-}" != true ]; }
step browser browser
# go test -json through internal/testreport: what plain go test prints, then
# every skipped test with its message and the counts. The step's status is
# go test's (the reporter's only if go test passed).
race() {
  local dir st
  dir=$(mktemp -d)
  go build -o "$dir/testreport" ./internal/testreport || { rm -rf "$dir"; return 1; }
  if go test -json -race -count=1 -timeout 20m "$@" ./... | "$dir/testreport"; then st=(0 0); else st=("${PIPESTATUS[@]}"); fi
  rm -rf "$dir"
  return $((st[0] ? st[0] : st[1]))
}
step "go test -race" race "$@"
# Issue 13's flood acceptance measures this machine, not the race detector:
# its own step, without -race, after the race tests.
step "flood acceptance" go test -tags flood -count=1 -run TestFloodAcceptance ./ratelimit/
