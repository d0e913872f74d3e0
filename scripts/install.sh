#!/usr/bin/env bash
# Install Leaflab and its dev tools into ./.venv (idempotent; re-runs when pyproject changes).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "Leaflab needs Python >= 3.11 (found $("$PYTHON" --version))" >&2
  exit 1
fi
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv

stamp=.venv/.leaflab-install-stamp
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/pip install --quiet --upgrade pip
  # torch is pinned to the CPU build (==2.13.0) in pyproject: pip takes it from the
  # local wheel store here; an unpinned torch would pull a multi-GB CUDA build.
  .venv/bin/pip install --quiet -e '.[dev]'
  echo "$want" > "$stamp"
fi

# The browser code's checks (ESLint, tsc; scripts/lint.sh) from package-lock.json, when npm is
# here: the pages themselves need nothing installed. Re-run only when the lock file changes.
if command -v npm >/dev/null; then
  js_stamp=node_modules/.leaflab-install-stamp
  js_want=$(sha256sum package-lock.json | cut -d' ' -f1)
  if [ "$(cat "$js_stamp" 2>/dev/null)" != "$js_want" ]; then
    npm ci --no-audit --no-fund --silent
    echo "$js_want" > "$js_stamp"
  fi
else
  echo "npm not found: skipping the browser code's lint tools (scripts/lint.sh skips them too)" >&2
fi
echo "leaflab installed in .venv ($(.venv/bin/leaflab --version))"
