#!/usr/bin/env bash
# Installs Debian's Chromium when it is missing: the HTML report test opens the report in it
# (headless, driven over the DevTools protocol). Needs root (or sudo) and Debian's package index.
# scripts/provision.mjs runs it from `npm test` when no Chromium is found.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-chromium: chromium is missing and apt-get is not available; install Chromium and put it on PATH (or set CHROMIUM=/path/to/chrome)" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq chromium >/dev/null
# Debian puts it in /usr/bin, which a restricted PATH may leave out: scripts/provision.mjs looks there too.
BIN="$(command -v chromium || echo /usr/bin/chromium)"
[ -x "$BIN" ] || { echo "ensure-chromium: apt-get installed chromium but there is no $BIN" >&2; exit 1; }
"$BIN" --version 2>/dev/null || true
