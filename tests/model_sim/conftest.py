"""A simulator served in-process for the whole module; every test starts from a reset."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from services.model_sim.server import SimServerHandle, serve_in_thread


@pytest.fixture(scope="module")
def sim() -> Iterator[SimServerHandle]:
    handle = serve_in_thread(0)
    yield handle
    handle.stop()


@pytest.fixture
def http(sim: SimServerHandle) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=sim.url, timeout=10) as client:
        client.post("/_sim/reset").raise_for_status()
        yield client
