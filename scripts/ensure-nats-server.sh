#!/usr/bin/env bash
# Installs Debian's nats-server when it is missing: the replication tests (test/replication/)
# start it with JetStream (-js) on a free loopback port with a temporary store. Needs root (or
# sudo) and Debian's package index. scripts/provision.mjs runs it from `npm test` when no
# nats-server is found.
set -euo pipefail
if command -v nats-server >/dev/null 2>&1 || [ -x /usr/sbin/nats-server ]; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-nats-server: nats-server is missing and apt-get is not available; install nats-server (2.9 or later) and put it on PATH (or set NATS_SERVER=/path/to/nats-server)" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
# The package index may be missing or stale on a fresh machine: update it only when the install needs it.
if ! $SUDO apt-get install -y -qq nats-server >/dev/null 2>&1; then
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq nats-server >/dev/null
fi
# Debian puts it in /usr/sbin, which a user's PATH may leave out: scripts/provision.mjs looks there too.
BIN="$(command -v nats-server || echo /usr/sbin/nats-server)"
[ -x "$BIN" ] || { echo "ensure-nats-server: apt-get installed nats-server but there is no $BIN" >&2; exit 1; }
"$BIN" --version
