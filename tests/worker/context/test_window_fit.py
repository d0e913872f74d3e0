"""The context budget counts what the server evaluates, and a view never overflows it.

With the simulator on real processes: a small window (tools schemas take most of
it, as on a 4k llama.cpp server) makes a file-reading session compress until every
request fits, and a message that cannot fit is refused before anything is sent.
The simulator's ``/_sim/requests`` shows what was really sent.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import httpx
from sqlalchemy.orm import Session, sessionmaker

from services.worker.context.compose import budget_of
from services.worker.context.view import RecordedSummary, build_view
from services.worker.context.window import ContextWindow, tools_tokens, window_for
from services.worker.llm.capabilities import Capabilities
from services.worker.llm.token_estimate import view_tokens
from services.worker.llm.types import estimate_tokens
from services.worker.settings import WorkerSettings
from services.worker.spine.deps import RuntimeDeps
from services.worker.toolset import build_registry
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import Services
from tests.worker.context import session_script as script

# Window 6,500, 500 kept for the reply, ≈ 4,500 of tool schemas: ≈ 1,500 for messages.
ENV = {
    "LEAFLAB_CONTEXT_LIMIT_TOKENS": "6500",
    "LEAFLAB_CONTEXT_OUTPUT_RESERVE_TOKENS": "500",
    "LEAFLAB_CONTEXT_KEEP_USER_TOKENS": "100",
}
PLAN = "abcd"


def _plan_script() -> dict[str, Any]:
    replies: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": f"{n}.txt"}}]} for n in PLAN
    ]
    return {"latency_ms": 5, "replies": [*replies, {"content": "done"}]}


def _schema_tokens() -> int:
    """The tool schemas every request carries, counted here, not read from the step."""
    schemas = build_registry().schemas()
    return estimate_tokens(json.dumps(schemas, ensure_ascii=False, separators=(",", ":")))


def test_a_long_session_is_compressed_until_every_request_fits(
    services: Services, session_factory: sessionmaker[Session]
) -> None:
    services.env.update(ENV)
    sim = services.simulator()
    client = client_for(services.api(), make_user(session_factory))
    services.worker()
    session_id = client.post("/v1/sessions", json={}).json()["id"]
    script.write_files(Path(services.env["LEAFLAB_HOME"]) / "workspaces" / session_id)
    base = sim.url.removesuffix("/v1")
    httpx.put(f"{base}/_sim/scripts/{session_id}", json=_plan_script(), timeout=5)
    job_id = client.post(
        f"/v1/sessions/{session_id}/messages", json={"content": "Read a, b, c and d."}
    ).json()["job_id"]
    job = wait_job(client, job_id, timeout_s=90)
    assert job["status"] == "succeeded", job["error"]

    steps = client.get(f"/v1/jobs/{job_id}/steps").json()["items"]
    llm = [s for s in steps if s["kind"] == "llm"]
    sent = script.received(sim.url, session_id)
    assert len(llm) == len(sent) == len(PLAN) + 1
    tools = _schema_tokens()
    for step, messages in zip(llm, sent, strict=True):
        ctx = step["arguments"]["context"]
        # What was counted: the tool schemas too, against the configured window.
        assert ctx["window_tokens"] == 6500 and ctx["window_source"] == "configured"
        assert ctx["tool_mode"] == "native" and ctx["output_reserve_tokens"] == 500
        evaluated = view_tokens(messages) + tools
        assert evaluated <= 6500 - 500, (evaluated, ctx)
        assert evaluated == ctx["evaluated_tokens"], ctx
        assert step["result"]["usage"]["estimated"] is False  # the simulator reports usage
    # Without compression the last view would not have fitted.
    assert llm[-1]["arguments"]["context"]["tokens_before"] > 1500


def test_a_message_that_cannot_fit_is_refused_before_sending(
    services: Services, session_factory: sessionmaker[Session]
) -> None:
    services.env.update(ENV)
    sim = services.simulator()
    client = client_for(services.api(), make_user(session_factory))
    services.worker()
    session_id = client.post("/v1/sessions", json={}).json()["id"]
    huge = "a long pasted text " * 1_000  # ≈ 6,300 tokens in the newest message
    job_id = client.post(f"/v1/sessions/{session_id}/messages", json={"content": huge}).json()[
        "job_id"
    ]
    job = wait_job(client, job_id, timeout_s=60)
    assert job["status"] == "failed"
    assert "does not fit the model's context window" in job["error"], job["error"]
    (step,) = [s for s in client.get(f"/v1/jobs/{job_id}/steps").json()["items"]]
    assert step["status"] == "failed" and step["error"]["code"] == "context_overflow"
    assert script.received(sim.url, session_id) == []  # nothing was sent


def _deps(
    caps: Capabilities, *, json_tools: bool = False, client: object | None = None
) -> RuntimeDeps:
    """Just what ``window_for`` reads: settings and the router's endpoint clients."""
    client = client or SimpleNamespace(capabilities=lambda: caps, base_url="http://127.0.0.1:9/v1")
    endpoint = SimpleNamespace(client=client, json_tool_protocol=json_tools)
    router = SimpleNamespace(endpoints={"local": endpoint})
    return cast(RuntimeDeps, SimpleNamespace(settings=WorkerSettings(), router=router))


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": f"tool_{i}",
            "description": "does a thing " * 10,
            "parameters": {"type": "object", "properties": {"x": {"type": "string"}}},
        },
    }
    for i in range(8)
]


class TestWindowArithmetic:
    def test_the_endpoints_window_and_overheads_are_counted(self) -> None:
        caps = Capabilities(
            context_tokens=1024, context_source="props", template_overhead_tokens=40
        )
        window = window_for(_deps(caps), profile="local", tools=TOOLS)
        assert (window.window_tokens, window.window_source) == (1024, "props")
        assert window.output_reserve_tokens == 512  # half the window (max_tokens is 2048)
        assert window.tools_tokens > 400 and window.template_tokens == 40
        assert window.input_tokens == 1024 - 512 - window.tools_tokens - 40

    def test_json_protocol_counts_the_tool_instructions(self) -> None:
        caps = Capabilities(context_tokens=8192, tool_mode="json")
        native = window_for(_deps(Capabilities(context_tokens=8192)), profile="local", tools=TOOLS)
        json_mode = window_for(_deps(caps), profile="local", tools=TOOLS)
        assert json_mode.tool_mode == "json" and native.tool_mode == "native"
        assert json_mode.tools_tokens != native.tools_tokens and json_mode.tools_tokens > 300

    def test_a_client_without_capabilities_gets_the_configured_window(self) -> None:
        deps = _deps(Capabilities(context_tokens=1024), client=SimpleNamespace())
        window = window_for(deps, profile="local", tools=None)
        assert window.window_tokens == WorkerSettings().context_limit_tokens

    def test_the_last_resort_layer_makes_a_long_view_fit_a_1024_window(self) -> None:
        window = ContextWindow(1024, "props", 256, 200, 20, "native")
        system = {"role": "system", "content": "You help."}
        base: list[dict[str, Any]] = []
        for i in range(6):
            call = {"id": f"c{i}", "function": {"name": "read_file", "arguments": "{}"}}
            base += [
                {"role": "user", "content": f"question {i}"},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": f"c{i}", "content": f"{i}" * 3000},
            ]
        # This round's summary is already recorded (the caller made it): what is
        # left to do is the last-resort layer.
        done = [RecordedSummary(round=0, content="earlier: files were read", covers=2)]
        view = build_view(
            system=system,
            base=base,
            summaries=done,
            round_no=0,
            budget=budget_of(WorkerSettings(), window),
        )
        assert view.fits and window.fits(view.messages)
        assert "shrink" in [layer.layer for layer in view.layers]


def test_the_tool_count_is_kept_per_list_object_and_never_mixed_up() -> None:
    # The registry's one schema list is counted once; another list (another tool
    # set, a subagent's subset) is counted for itself, never given the cached count.
    one = [{"type": "function", "function": {"name": "a", "parameters": {}}}]
    three = one + [
        {"type": "function", "function": {"name": n * 40, "parameters": {}}} for n in "bc"
    ]
    first = tools_tokens(one, json_mode=False)
    assert tools_tokens(one, json_mode=False) == first
    assert tools_tokens(three, json_mode=False) > first
    assert tools_tokens(one, json_mode=True) != first  # the JSON protocol's own text
    want = {1: first, 3: tools_tokens(three, json_mode=False)}
    for i in range(200):  # lists made and dropped: ids reused, counts still their own
        fresh = [dict(s) for s in (one if i % 2 else three)]
        assert tools_tokens(fresh, json_mode=False) == want[len(fresh)]
        del fresh  # the next list, of the other size, may take this one's id
