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
echo "leaflab installed in .venv ($(.venv/bin/leaflab --version))"
