#!/usr/bin/env bash
# Debian's Chromium for the page tests (Playwright drives it; no browser download).
set -euo pipefail
if ! command -v chromium >/dev/null 2>&1; then
  echo "ensure_browser: installing chromium"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends chromium fonts-dejavu-core >/dev/null \
    || { apt-get update >/dev/null && apt-get install -y --no-install-recommends chromium fonts-dejavu-core >/dev/null; }
fi
echo "chromium present: $(chromium --version 2>/dev/null | head -1)"
