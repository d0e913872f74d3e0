#!/usr/bin/env bash
# Lint and types: ruff (rules + format check) and mypy, in one command.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check services tests bench
.venv/bin/ruff format --check services tests bench
.venv/bin/mypy
