"""What `leaflab up` prints about the configured endpoint (discovered on the spot)."""

from __future__ import annotations

import pytest

from services.model_sim.server import SimServerHandle, serve_in_thread
from services.worker.operator import endpoint_summary
from tests.worker.llm.discovery.conftest import N_CTX


def test_the_banner_describes_a_quirky_server(
    llama_sim: SimServerHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LEAFLAB_LLM_BASE_URL", llama_sim.base_url)
    monkeypatch.setenv("LEAFLAB_LLM_STRUCTURED_OUTPUT", "prompt")
    lines = endpoint_summary()
    assert lines[0] == f"model leaflab-sim at {llama_sim.base_url} (llama-cpp-python)"
    text = "\n".join(lines)
    assert f"context: {N_CTX} tokens (from the server's overflow error) [discovered]" in text
    assert "structured output: prompt [configured]" in text
    assert "strict user/assistant alternation [discovered]" in text
    assert "concurrency: 1 [discovered]" in text


def test_the_banner_says_the_simulator_answers(
    sim: SimServerHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LEAFLAB_LLM_BASE_URL", sim.base_url)
    assert endpoint_summary()[0].endswith("(leaflab-sim)")


def test_the_banner_warns_of_an_unreachable_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    with serve_in_thread() as gone:
        url = gone.base_url
    monkeypatch.setenv("LEAFLAB_LLM_BASE_URL", url)
    lines = endpoint_summary(timeout_s=3)
    assert lines[0].startswith(f"model leaflab-sim at {url}: UNREACHABLE (ConnectError")
    assert "starting anyway" in lines[1]
