#!/usr/bin/env bash
# The test command: install, start what the tests need, run them. Under CI a missing
# service fails the run (the tests never skip for lack of one).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install.sh
scripts/ensure_services.sh
scripts/ensure_fault_tools.sh
scripts/ensure_browser.sh
scripts/ensure_latex.sh
# The real-model tier's server and model (cached: the first build takes ~5 minutes, up to 25 under load).
scripts/ensure_real_model.sh
if [ -x scripts/ensure_docker.sh ]; then
  scripts/ensure_docker.sh
fi
if .venv/bin/leaflab sandbox --help >/dev/null 2>&1; then
  .venv/bin/leaflab sandbox build-image --offline
fi
export LEAFLAB_ENV=test
exec .venv/bin/pytest "${@:-tests}"
