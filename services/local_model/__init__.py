"""A real OpenAI-compatible model server that Leaflab did not write: llama.cpp's.

``python -m services.local_model`` runs *inside .venv-llama* (llama-cpp-python[server]
with its own pinned FastAPI/uvicorn/pydantic-settings, see scripts/ensure_real_model.sh)
and serves Gemma 3 270M with Gemma's official chat template. Nothing here imports
llama_cpp at import time, so Leaflab's own venv can import the package (the template,
the argument parser) without it.
"""
