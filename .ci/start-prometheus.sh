#!/usr/bin/env bash
# Installs Debian's prometheus for the --telemetry prometheus test, without
# running the packaged service: the test starts its own server (its own
# prometheus.yml with a 1 s scrape interval, temp storage, bound to
# 127.0.0.1 on a free port) and stops it. Without recommends, so that no
# node exporter comes along listening on all interfaces.
# Prints the server binary (JOULEBENCH_PROMETHEUS_BIN).
set -euo pipefail
bin=/usr/bin/prometheus
if [ ! -x "$bin" ]; then
  # Keep the package's init script from starting the service: a
  # policy-rc.d that refuses every start, unless the image has one.
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod 0755 /usr/sbin/policy-rc.d
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends prometheus >&2
fi
# If a service instance runs anyway (systemd ignores policy-rc.d), stop it:
# only the test's own server may listen.
if command -v systemctl >/dev/null && systemctl is-active --quiet prometheus 2>/dev/null; then
  systemctl stop prometheus >&2
  systemctl disable prometheus >&2 || true
elif [ -s /run/prometheus/prometheus.pid ]; then
  pid="$(cat /run/prometheus/prometheus.pid)"
  kill "$pid" 2>/dev/null || true
fi
"$bin" --version >&2
echo "$bin"
