#!/usr/bin/env bash
# Debian packages some tests need; each is skipped when its binary is already there. Safe to run again.
#   chromium    renders the /dashboard page headless (tests/report/test_dashboard_browser.py)
#   prometheus  serves dcgm-exporter metrics to `report --prometheus` (tests/report/test_prometheus.py)
set -euo pipefail

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium fonts-dejavu-core)
command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)

if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "setup-system: need root to install: ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends "${missing[@]}"
