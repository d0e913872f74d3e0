"""Research-tool fixtures: the recorded web on loopback, a canary, settings aimed at them."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.worker.tools.web.settings import ResearchToolSettings
from tests.fixtures.recorded_web import BRAVE_KEY, RecordedWeb, canary, recorded_web

__all__ = ["canary", "recorded_web"]


def settings_for(web: RecordedWeb, tmp_path: Path, **overrides: object) -> ResearchToolSettings:
    """Settings whose APIs and allow list point at the recorded web (and only there)."""
    values: dict[str, object] = {
        "web_allow": web.allow_entry,
        "brave_api_key": BRAVE_KEY,
        "brave_base_url": f"{web.base}/res/v1",
        "openalex_base_url": web.base,
        "files_dir": tmp_path / "files",
        "web_fetch_timeout_s": 5.0,
        **overrides,
    }
    return ResearchToolSettings(**values)  # type: ignore[arg-type]


@pytest.fixture
def research(recorded_web: RecordedWeb, tmp_path: Path) -> ResearchToolSettings:
    return settings_for(recorded_web, tmp_path)
