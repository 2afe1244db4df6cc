#!/usr/bin/env bash
# Installs Debian's Chromium when it is missing: the HTML report test opens the report in it
# (headless, driven over the DevTools protocol). Needs root and Debian's package index.
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
command -v chromium >/dev/null 2>&1 || { echo "ensure-chromium: apt-get installed chromium but it is not on PATH" >&2; exit 1; }
chromium --version 2>/dev/null || true
