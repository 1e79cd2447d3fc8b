#!/usr/bin/env bash
# The alert rules in deploy/prometheus are checked by Debian's promtool
# (package prometheus): `promtool check rules` lints them and
# `promtool test rules` runs their unit tests (series in, alerts out).
# This installs promtool with apt-get when it is missing and running as
# root (PROMTOOL overrides its path), then runs both. Run it, or source it
# and call promtool_setup and promtool_run; it fails with what to do when
# promtool cannot be had.
promtool_setup() {
  local promtool=${PROMTOOL:-/usr/bin/promtool}
  if [ ! -x "$promtool" ]; then
    if [ "$(id -u)" != 0 ]; then
      echo "promtool: $promtool is missing: install Debian's prometheus (sudo apt-get install prometheus) or set PROMTOOL" >&2
      return 1
    fi
    echo "promtool: installing prometheus with apt-get"
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null || {
        echo "promtool: apt-get install prometheus failed" >&2
        return 1
      }
    fi
  fi
  if [ ! -x "$promtool" ]; then
    echo "promtool: $promtool is still missing after installing prometheus: set PROMTOOL to its path" >&2
    return 1
  fi
  echo "promtool: $("$promtool" --version 2>&1 | head -1)"
}

# promtool_run lints the rules and runs their unit tests.
promtool_run() {
  local promtool=${PROMTOOL:-/usr/bin/promtool} dir
  dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../deploy/prometheus" && pwd) || return 1
  (cd "$dir" && "$promtool" check rules edgekit-alerts.yml && "$promtool" test rules edgekit-alerts.test.yml)
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -uo pipefail
  promtool_setup && promtool_run
fi
