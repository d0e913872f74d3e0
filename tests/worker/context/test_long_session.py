"""A long session compresses the model's view, never the stored history; a worker
killed right after recording a summary resumes to exactly the same view."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import redis
from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts.keys import job_stream
from services.common.events import decode_entry
from tests.conftest import Stack
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import Services
from tests.worker.context import session_script as script


def _run_session(
    client: httpx.Client,
    services: Services,
    sim_url: str,
    summariser: dict[str, Any] | None = None,
) -> tuple[str, str]:
    session_id = client.post("/v1/sessions", json={}).json()["id"]
    script.write_files(Path(services.env["LEAFLAB_HOME"]) / "workspaces" / session_id)
    script.install(sim_url, session_id)
    if summariser is not None:
        base = sim_url.removesuffix("/v1")
        key = f"{session_id}:summary"
        httpx.put(f"{base}/_sim/scripts/{key}", json=summariser, timeout=5).raise_for_status()
    job_id = client.post(
        f"/v1/sessions/{session_id}/messages", json={"content": "Read the files and report."}
    ).json()["job_id"]
    return session_id, job_id


def _events(stack: Stack, job_id: str) -> list[dict[str, Any]]:
    raw = redis.Redis.from_url(stack.redis_url).xrange(job_stream(job_id))
    return [decode_entry(i, f) for i, f in raw]


def _main_requests(sim_url: str, session_id: str) -> list[list[dict[str, Any]]]:
    return script.received(sim_url, session_id)


class TestLongSession:
    def test_every_layer_fires_and_the_stored_history_stays_whole(
        self, services: Services, session_factory: sessionmaker[Session], stack: Stack
    ) -> None:
        services.env.update(script.CONTEXT_ENV)
        sim = services.simulator()
        client = client_for(services.api(), make_user(session_factory))
        services.worker()
        session_id, job_id = _run_session(client, services, sim.url)

        job = wait_job(client, job_id, timeout_s=120)
        assert job["status"] == "succeeded", job
        assert job["result"]["content"] == script.FINAL

        compressions = [e["data"] for e in _events(stack, job_id) if e["type"] == "compression"]
        assert {c["layer"] for c in compressions} == script.ALL_LAYERS
        assert all(c["after_tokens"] < c["before_tokens"] for c in compressions), compressions

        # The model really received compressed views, with the two summaries in turn.
        requests = _main_requests(sim.url, session_id)
        assert len(requests) == len(script.PLAN) + 1
        first_user = [r[1]["content"] for r in requests]
        asked = script.received(sim.url, f"{session_id}:summary")
        assert len(asked) >= 2
        assert any(script.SUMMARIES[0] in c for c in first_user)
        assert script.SUMMARIES[len(asked) - 1] in first_user[-1]
        # The rolling summary reads the previous one.
        assert script.SUMMARIES[0] in asked[1][1]["content"]

        # Each llm step recorded a digest of exactly what was sent.
        steps = client.get(f"/v1/jobs/{job_id}/steps").json()["items"]
        llm = [s for s in steps if s["kind"] == "llm"]
        assert len(llm) == len(requests)
        for step, sent in zip(llm, requests, strict=True):
            ctx = step["arguments"]["context"]
            assert script.digest(sent[: ctx["view_messages"]]) == ctx["view_sha256"]
        assert [s["kind"] for s in steps].count("summary") == len(asked)

        # Every round that compressed is also a span with before/after tokens, in the
        # job's trace; a round whose context fitted as it was writes none.
        compressed_rounds = {c["round"] for c in compressions}
        assert len(compressed_rounds) < len(requests)  # the first rounds fit
        names = {"context.compress", "context.summarize"}
        spans: list[dict[str, Any]] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            trace = client.get(f"/v1/traces/{job['trace_id']}").json()
            spans = [s for s in trace.get("spans", []) if s["name"] in names]
            if len([s for s in spans if s["name"] == "context.compress"]) >= len(compressed_rounds):
                break
            time.sleep(0.5)
        compress = [s["attributes"] for s in spans if s["name"] == "context.compress"]
        assert sorted(a["leaflab.round"] for a in compress) == sorted(compressed_rounds)
        assert all(
            a["leaflab.context.tokens_after"] < a["leaflab.context.tokens_before"] for a in compress
        )
        summarize = [s for s in spans if s["name"] == "context.summarize"]
        assert len(summarize) == len(asked)

        # The stored history is whole: every tool result is the full file.
        messages = client.get(f"/v1/sessions/{session_id}/messages").json()["items"]
        tools = [m for m in messages if m["role"] == "tool"]
        assert len(tools) == len(script.PLAN)
        for name, m in zip(script.PLAN, tools, strict=True):
            assert f"{name}-line 30 " in m["content"] and f"{name}-line 1 " in m["content"]
            assert m["model_content"] is None
        assistants = [m for m in messages if m["role"] == "assistant"]
        assert sum(1 for m in assistants if m["content"] == script.THINKING) == len(script.PLAN) - 2


class TestResumeAfterKill:
    def test_kill_9_after_a_summary_resumes_to_the_same_model_view(
        self, services: Services, session_factory: sessionmaker[Session]
    ) -> None:
        services.env.update(script.CONTEXT_ENV)
        sim = services.simulator()
        client = client_for(services.api(), make_user(session_factory))

        # The reference: the same session, uninterrupted.
        reference = services.worker("reference")
        ref_session, ref_job = _run_session(client, services, sim.url)
        assert wait_job(client, ref_job, timeout_s=120)["status"] == "succeeded"
        reference.stop()

        # The victim dies right after its first summary step is recorded.
        services.env["LEAFLAB_FAILPOINTS"] = "context.after_summary=kill@1"
        victim = services.worker("victim")
        services.env.pop("LEAFLAB_FAILPOINTS")
        session_id, job_id = _run_session(client, services, sim.url)
        deadline = time.monotonic() + 90
        while victim.popen.poll() is None:
            assert time.monotonic() < deadline, "the failpoint never fired"
            time.sleep(0.1)
        before = len(_main_requests(sim.url, session_id))
        services.worker("successor")
        job = wait_job(client, job_id, timeout_s=120)
        assert job["status"] == "succeeded", job
        assert job["attempts"] >= 2

        after = _main_requests(sim.url, session_id)
        expected = _main_requests(sim.url, ref_session)
        assert 0 < before < len(after)
        assert after == expected
        # The summary was asked once per summary step, never again on resume.
        summaries = script.received(sim.url, f"{session_id}:summary")
        assert len(summaries) == len(script.received(sim.url, f"{ref_session}:summary")) >= 2


class TestSummaryFallback:
    def test_a_failing_summariser_gives_a_recorded_local_summary(
        self, services: Services, session_factory: sessionmaker[Session]
    ) -> None:
        services.env.update(script.CONTEXT_ENV)
        sim = services.simulator()
        client = client_for(services.api(), make_user(session_factory))
        services.worker()
        # Every summary call is refused (400: not retried, no fallback model).
        failing = {"replies": [e for _ in range(5) for e in ({"error": 400}, {"content": "-"})]}
        session_id, job_id = _run_session(client, services, sim.url, failing)

        job = wait_job(client, job_id, timeout_s=120)
        assert job["status"] == "succeeded", job
        steps = client.get(f"/v1/jobs/{job_id}/steps").json()["items"]
        summaries = [s for s in steps if s["kind"] == "summary"]
        assert summaries and all(s["result"]["source"] == "local" for s in summaries)
        assert all("400" in s["result"]["error"] for s in summaries)
        last = _main_requests(sim.url, session_id)[-1]
        assert "(local summary; the summariser was unavailable)" in last[1]["content"]
