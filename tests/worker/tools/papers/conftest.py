"""The paper tools use the research-tool fixtures (recorded OpenAlex on loopback)."""

from __future__ import annotations

from tests.worker.tools.web.conftest import canary, recorded_web, research

__all__ = ["canary", "recorded_web", "research"]
