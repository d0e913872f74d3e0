#!/usr/bin/env bash
# Guarantee mutations: break each guarantee on purpose (tests/mutations/catalog.py),
# run only its tests, fail if any mutation leaves them green. Files are restored
# after each mutation. Needs the services scripts/test.sh starts (Postgres, Redis).
set -euo pipefail
cd "$(dirname "$0")/.."
export LEAFLAB_ENV=test PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
exec .venv/bin/python -m tests.mutations.run "$@"
