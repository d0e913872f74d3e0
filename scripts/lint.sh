#!/usr/bin/env bash
# Lint and types: ruff (rules + format check), mypy and import-linter, then ESLint and tsc on the browser
# code when scripts/install.sh installed them (node_modules), in one command.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check services tests bench
.venv/bin/ruff format --check services tests bench
.venv/bin/mypy
# Import layers as import-linter contracts (.importlinter).
.venv/bin/lint-imports
if [ -d node_modules ]; then
  npx --no-install eslint services/api/web/static tests/web/js eslint.config.js
  npx --no-install tsc --project jsconfig.json
else
  echo "lint.sh: no node_modules (scripts/install.sh runs npm ci): ESLint and tsc skipped" >&2
fi
