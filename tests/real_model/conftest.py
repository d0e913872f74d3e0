"""The real-model tier: tests against llama.cpp's server (a process Leaflab did not write).

``real_model`` (session) and ``real_model_factory`` come from tests/fixtures/real_model.py;
``services`` (API and worker processes) from tests/fixtures/processes.py.
"""

from __future__ import annotations

from tests.fixtures.real_model import real_model, real_model_alive, real_model_factory

__all__ = ["real_model", "real_model_alive", "real_model_factory"]
