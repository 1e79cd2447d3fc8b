#!/usr/bin/env bash
# make test's checks of the shortener's API document by independent tools
# (pinned in tools/openapi-lint/package-lock.json, installed with npm ci
# when missing): Redocly CLI lints it with tools/openapi-lint/redocly.yaml,
# where every warning is an error; openapi-typescript generates a client's
# types from it, and tsc --strict checks tools/openapi-lint/client_check.ts
# (history, both batch answers, an import, stats) against them with no
# cast. Without node 20 or npm it fails under CI=true and says so
# elsewhere.
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
[ "${PIPESTATUS[0]}" = 0 ] || exit 1

# The generated client: no cast may stand in for a type the document lacks.
if grep -nE '^[^/]*(\bas\b|\bany\b|[]A-Za-z0-9_)]!([^=]|$))' "$dir/client_check.ts"; then
  echo "openapi client check: client_check.ts casts (as, any, !): the check must hold without" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$dir/client_check.ts" "$tmp/"
"$dir/node_modules/.bin/openapi-typescript" "$root/shortener/openapi.json" -o "$tmp/api.d.ts" >/dev/null &&
  "$dir/node_modules/.bin/tsc" --strict --noEmit --target es2022 --module es2022 --moduleResolution bundler \
    "$tmp/client_check.ts" || { echo "openapi client check: the generated client does not type-check" >&2; exit 1; }
echo "openapi client check: the generated client type-checks (history, batch, import, stats) with no cast"
