"""Discovery over real HTTP: what each kind of server is found to accept."""

from __future__ import annotations

import time

import httpx

from services.model_sim.server import SimServerHandle, serve_in_thread
from services.worker.llm.capabilities import PERMISSIVE
from services.worker.llm.discovery import DiscoveryConfig, Target, discover
from services.worker.llm.discovery.probes import window_in
from services.worker.llm.discovery.summary import summary_lines
from tests.worker.llm.discovery.conftest import N_CTX, probes_seen

MODEL = "leaflab-sim"
PROBE_ALL = DiscoveryConfig(probe_simulator=True, timeout_s=10)


def _target(sim: SimServerHandle) -> Target:
    return Target(sim.base_url, "sk-test", MODEL)


def test_the_permissive_simulator_is_found_permissive(sim: SimServerHandle) -> None:
    before = probes_seen(sim)
    caps = discover(_target(sim), PROBE_ALL)
    assert caps.reachable and caps.server == "leaflab-sim" and caps.error is None
    assert (caps.structured_output, caps.tool_mode, caps.stream_tool_calls) == (
        "json_schema",
        "native",
        True,
    )
    assert (caps.system_role, caps.alternation, caps.max_concurrency) == (True, False, None)
    assert caps.context_tokens is None and caps.context_source == "configured"
    assert caps.models == (MODEL,)
    assert probes_seen(sim) > before  # the probes really went out


def test_the_simulator_is_trusted_without_probes_by_default(sim: SimServerHandle) -> None:
    before = probes_seen(sim)
    caps = discover(_target(sim))
    assert caps.server == "leaflab-sim" and caps.reachable
    assert probes_seen(sim) == before


def test_llama_cpp_python_quirks_are_found(llama_sim: SimServerHandle) -> None:
    caps = discover(_target(llama_sim), PROBE_ALL)
    assert caps.server == "llama-cpp-python"
    # /v1/models says nothing: the window comes from the overflow error.
    assert (caps.context_tokens, caps.context_source) == (N_CTX, "error_probe")
    assert caps.structured_output == "json_object"
    assert caps.alternation is True
    # Gemma's template folds the system message itself: the server accepts it.
    assert caps.system_role is True
    # Tool calls answered whole, but a streamed one comes back as an empty 200.
    assert (caps.tool_mode, caps.stream_tool_calls) == ("native", False)
    assert caps.max_concurrency == 1
    assert caps.tokenize_path == "/extras/tokenize"
    assert caps.template_overhead_tokens > 0
    assert caps.error is None, caps.error


def test_vllm_states_its_window_and_tokenizer(vllm_sim: SimServerHandle) -> None:
    caps = discover(_target(vllm_sim), PROBE_ALL)
    assert caps.server == "vllm"
    assert (caps.context_tokens, caps.context_source) == (N_CTX, "models")
    assert caps.tokenize_path == "/tokenize"
    assert (caps.structured_output, caps.tool_mode, caps.alternation) == (
        "json_schema",
        "native",
        False,
    )
    assert caps.max_concurrency is None


def test_llama_cpp_states_its_window_and_slots_in_props() -> None:
    with serve_in_thread(quirks="llama.cpp", n_ctx=N_CTX) as server:
        caps = discover(_target(server), PROBE_ALL)
    assert caps.server == "llama.cpp"
    assert (caps.context_tokens, caps.context_source) == (N_CTX, "props")
    assert caps.max_concurrency == 4  # total_slots
    assert caps.tokenize_path == "/tokenize"
    assert caps.tool_mode == "native" and caps.error is None


def test_an_unreachable_endpoint_gives_the_defaults_quickly() -> None:
    with serve_in_thread() as gone:
        target = _target(gone)
    started = time.monotonic()
    caps = discover(target, DiscoveryConfig(timeout_s=5))
    assert time.monotonic() - started < 5
    assert caps.reachable is False and caps.error and caps.error.startswith("unreachable")
    assert caps.structured_output == PERMISSIVE.structured_output
    reason = caps.error.removeprefix("unreachable: ")
    assert summary_lines(caps, target.base_url, MODEL)[0].endswith(f"UNREACHABLE ({reason})")


def test_discovery_is_bounded_by_its_timeout_and_keeps_what_it_found() -> None:
    # Every completion takes 1.5 s: the 2.5 s budget covers /v1/models and one probe.
    with serve_in_thread(quirks="llama-cpp-python", latency_ms=1500) as slow:
        caps = discover(_target(slow), DiscoveryConfig(timeout_s=2.5, probe_timeout_s=2.5))
        made = probes_seen(slow)
    # Probes run one after another: the first takes 1.5 s, the second is cut at the
    # 2.5 s deadline, and no third starts (without the bound every probe is made).
    # Counted by the server, not timed, so a loaded machine cannot fail it.
    assert 1 <= made <= 2, made
    assert caps.reachable and caps.server == "llama-cpp-python"
    assert caps.error is not None and "ran out" in caps.error
    assert caps.max_concurrency == 1  # what identity alone tells still counts


def test_overflow_wordings_of_several_servers() -> None:
    assert window_in("Requested tokens (9000) exceed context window of 8192") == 8192
    vllm = "This model's maximum context length is 4096 tokens. However, you requested 5000"
    assert window_in(vllm) == 4096
    assert window_in("the request exceeds the available context size (2048 tokens)") == 2048
    assert window_in("model not found") is None


def test_the_quirky_server_refuses_what_llama_cpp_python_refuses(
    llama_sim: SimServerHandle,
) -> None:
    url = f"{llama_sim.base_url}/chat/completions"
    hi = {"role": "user", "content": "Hi"}
    body = {"model": MODEL, "messages": [hi], "max_tokens": 4}
    schema = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}}
    assert httpx.post(url, json={**body, "response_format": schema}).status_code == 500
    twice = httpx.post(url, json={**body, "messages": [hi, hi]})
    assert twice.status_code == 500 and "must alternate" in twice.json()["error"]["message"]
    streamed = httpx.post(url, json={**body, "messages": [hi, hi], "stream": True})
    assert (streamed.status_code, streamed.content) == (200, b"")
    listed = httpx.get(f"{llama_sim.base_url}/models").json()["data"][0]
    assert "max_model_len" not in listed and listed["owned_by"] == "me"
    usage_asked = {**body, "stream": True, "stream_options": {"include_usage": True}}
    assert '"usage"' not in httpx.post(url, json=usage_asked).text
    # Tools without a tool choice are ignored: a plain text answer, no tool call.
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": {}}}
    ask = {**body, "messages": [{"role": "user", "content": "use get_weather"}], "tools": [tool]}
    assert not httpx.post(url, json=ask).json()["choices"][0]["message"].get("tool_calls")
    called = httpx.post(url, json={**ask, "tool_choice": "auto"}).json()
    assert called["choices"][0]["message"]["tool_calls"]
