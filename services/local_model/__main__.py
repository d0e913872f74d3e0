"""``python -m services.local_model`` (with .venv-llama's python)."""

from services.local_model.server import main

main()
