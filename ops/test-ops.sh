#!/usr/bin/env bash
# make test-ops: the checks that need tools other than Go. It installs Debian's
# prometheus (promtool, prometheus) and chromium when they are missing and it
# can (root with apt-get); otherwise it stops with one line saying what to install.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "test-ops: installing ${missing[*]} (Debian packages)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "test-ops: install ${missing[*]} first (Debian: sudo apt-get install ${missing[*]})" >&2
    exit 1
  fi
fi

echo "test-ops: promtool check rules"
promtool check rules ops/alerts.yml
echo "test-ops: promtool test rules"
promtool test rules ops/alerts_test.yml
echo "test-ops: live Prometheus and headless Chromium"
go test -tags ops -count=1 -timeout 10m -v ./test/opscheck/...
