#!/usr/bin/env bash
# make test's lint of the shortener's API document by an independent
# linter: Redocly CLI (pinned in tools/openapi-lint/package-lock.json,
# installed with npm ci when missing) with tools/openapi-lint/redocly.yaml,
# where every warning is an error. Without node 20 or npm it fails under
# CI=true and says so elsewhere.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$root/tools/openapi-lint
if ! command -v npm >/dev/null || [ "$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)" -lt 20 ]; then
  echo "openapi lint: node 20 or later and npm are needed (found: $(node --version 2>/dev/null || echo none))" >&2
  [ "${CI:-}" != true ] && echo "openapi lint: skipped" && exit 0
  exit 1
fi
if [ ! -x "$dir/node_modules/.bin/redocly" ] || ! cmp -s "$dir/package-lock.json" "$dir/node_modules/.installed-lock.json"; then
  echo "openapi lint: npm ci in tools/openapi-lint/"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error && cp package-lock.json node_modules/.installed-lock.json) || {
    echo "openapi lint: npm ci in tools/openapi-lint/ failed" >&2
    exit 1
  }
fi
# REDOCLY_SUPPRESS_UPDATE_NOTICE and telemetry off: the run asks nothing of the network.
REDOCLY_SUPPRESS_UPDATE_NOTICE=true REDOCLY_TELEMETRY=off \
  "$dir/node_modules/.bin/redocly" lint --config "$dir/redocly.yaml" --format=stylish "$root/shortener/openapi.json" 2>&1 |
  grep -v '[║╔╚]'
exit "${PIPESTATUS[0]}"
