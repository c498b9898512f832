#!/usr/bin/env bash
# Tools the test suite needs beyond RabbitMQ and PostgreSQL (services.sh): Debian's chromium for
# the dashboard test (driven by playwright-core), and promtool (Debian's prometheus package) for
# the alerting-rule checks. Installs what is missing; idempotent. Used by .ci/run.
set -euo pipefail

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
apt_updated=0
apt_install() {
  if [ "$apt_updated" = 0 ]; then as_root apt-get update -qq; apt_updated=1; fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

command -v chromium >/dev/null || { echo "test-deps: installing chromium"; apt_install chromium; }
# promtool is optional: the rule check is skipped without it, so a failed install is not fatal.
command -v promtool >/dev/null || { echo "test-deps: installing prometheus (for promtool)"; apt_install prometheus || echo "test-deps: prometheus not installed; promtool checks will be skipped" >&2; }
echo "test-deps: chromium $(chromium --version 2>/dev/null | awk '{print $2}'), promtool $(command -v promtool >/dev/null && echo present || echo absent)"
