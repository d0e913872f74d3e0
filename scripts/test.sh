#!/usr/bin/env bash
# The test command: install, start what the tests need, run them, then the guarantee
# mutations (tests/mutations/). A missing service, Chromium or network namespaces fail
# the run (LEAFLAB_SKIP_BROWSER=1 / LEAFLAB_SKIP_NETNS=1 opt out, listed in the summary).
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
# The compose boot's images (tests/deploy/test_compose_boot.py), built from Debian
# packages: ~6 minutes the first time on this machine, seconds after (cached by tag).
if docker info >/dev/null 2>&1; then
  deploy/offline/build_images.sh >/dev/null \
    || echo "!!! deploy/offline/build_images.sh failed: the compose boot test will fail !!!" >&2
fi
export LEAFLAB_ENV=test
set +e
.venv/bin/pytest "${@:-tests}"
pytest_rc=$?

# The guarantee mutations (tests/mutations/): each breaks one guarantee in a scratch copy
# of the tree and runs only its tests, which must go red; about 5 minutes here. Run after
# every full run; a targeted run (arguments given) runs them only with LEAFLAB_MUTATIONS=1.
if [ "${LEAFLAB_SKIP_MUTATIONS:-0}" = "1" ]; then
  mutations="SKIPPED (LEAFLAB_SKIP_MUTATIONS=1)"
  mutations_rc=0
elif [ "$#" -gt 0 ] && [ "${LEAFLAB_MUTATIONS:-0}" != "1" ]; then
  mutations="not run (a targeted run; LEAFLAB_MUTATIONS=1 runs them)"
  mutations_rc=0
else
  # A full run that passed is the control (every selection green unmutated): skip it.
  control_flag=()
  if [ "$#" -eq 0 ] && [ "$pytest_rc" = 0 ]; then control_flag=(--no-control); fi
  scripts/mutate.sh "${control_flag[@]}" 2>&1 | tee "${TMPDIR:-/tmp}/leaflab-mutations.$$.log"
  mutations_rc=${PIPESTATUS[0]}
  mutations=$(sed -n 's/^mutations: //p' "${TMPDIR:-/tmp}/leaflab-mutations.$$.log" | head -1)
  rm -f "${TMPDIR:-/tmp}/leaflab-mutations.$$.log"
  [ "$mutations_rc" = 0 ] || mutations="FAILED: ${mutations:-the mutation run broke (exit $mutations_rc)}"
fi

echo "==================== test command summary ===================="
if [ "$pytest_rc" = 0 ]; then echo "pytest:    passed"; else echo "pytest:    FAILED (exit $pytest_rc)"; fi
echo "mutations: $mutations"
if [ "$pytest_rc" != 0 ]; then exit "$pytest_rc"; fi
exit "$mutations_rc"
