"""Discovery against the real llama.cpp server (llama-cpp-python, Gemma 3 270M):
what the simulator's llama-cpp-python quirks imitate is what the real one is found
to do."""

from __future__ import annotations

import time

from services.worker.llm.discovery import DiscoveryConfig, Target, discover, summary_lines
from tests.fixtures.real_model import RealModelServer


def test_discovery_finds_the_real_servers_limits(real_model: RealModelServer) -> None:
    started = time.monotonic()
    caps = discover(
        Target(real_model.base_url, "sk-local", real_model.model),
        DiscoveryConfig(timeout_s=120, probe_timeout_s=60),
    )
    elapsed = time.monotonic() - started
    print("\n".join(summary_lines(caps, real_model.base_url, real_model.model)))
    print(f"discovery took {elapsed:.1f}s")
    assert caps.reachable and caps.server == "llama-cpp-python"
    assert (caps.context_tokens, caps.context_source) == (real_model.n_ctx, "error_probe")
    assert caps.structured_output == "json_object"
    assert caps.alternation is True
    assert caps.system_role is True  # Gemma's template folds it into the first user turn
    assert caps.max_concurrency == 1
    assert caps.tokenize_path == "/extras/tokenize"
    assert caps.template_overhead_tokens > 0
    # Tools: native only if a tool call really came back, and then not streamed.
    assert caps.tool_mode == "json" or caps.stream_tool_calls is False
    assert caps.error is None, caps.error
