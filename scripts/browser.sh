#!/usr/bin/env bash
# The dashboard's browser tests need Debian's Chromium and playwright-core
# (with jsQR and pngjs, pinned in e2e/package-lock.json). This installs
# what is missing: chromium with apt-get when running as root, the npm
# packages with npm ci into e2e/node_modules. Playwright never downloads a
# browser: the scripts launch /usr/bin/chromium (CHROMIUM overrides it).
# Run it, or source it and call browser_setup; it fails with what to do
# when something cannot be had.
browser_setup() {
  local root chromium=${CHROMIUM:-/usr/bin/chromium}
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  if [ ! -x "$chromium" ]; then
    if [ "$(id -u)" != 0 ]; then
      echo "browser: $chromium is missing: install Debian's chromium (sudo apt-get install chromium) or set CHROMIUM" >&2
      return 1
    fi
    echo "browser: installing chromium with apt-get"
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null || {
        echo "browser: apt-get install chromium failed" >&2
        return 1
      }
    fi
  fi
  if [ ! -x "$chromium" ]; then
    echo "browser: $chromium is still missing after installing chromium: set CHROMIUM to its path" >&2
    return 1
  fi
  # playwright-core wants node 20 or later (Debian 12's own nodejs is 18).
  if ! command -v npm >/dev/null || [ "$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)" -lt 20 ]; then
    echo "browser: node 20 or later and npm are needed (found: $(node --version 2>/dev/null || echo none))" >&2
    return 1
  fi
  if [ ! -f "$root/e2e/node_modules/playwright-core/package.json" ] ||
    ! cmp -s "$root/e2e/package-lock.json" "$root/e2e/node_modules/.installed-lock.json"; then
    echo "browser: npm ci in e2e/"
    (cd "$root/e2e" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error &&
      cp package-lock.json node_modules/.installed-lock.json) || {
      echo "browser: npm ci in e2e/ failed" >&2
      return 1
    }
  fi
  echo "browser: $("$chromium" --version 2>/dev/null | head -1), node $(node --version), playwright-core $(node -p "require('$root/e2e/node_modules/playwright-core/package.json').version")"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -uo pipefail
  browser_setup
fi
