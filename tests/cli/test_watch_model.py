"""`leaflab watch` and the model: which model answered, a retried call, a parked job.

A turn's events are played into its Redis stream (as the worker publishes them) for a
job row no worker will take; `watch` reads them through the real API:

- ``model`` ({"model": name}) after each call: said once, again only when it changes;
- ``model_retry`` ({"attempt", "error", "wait_s"}): a call that had streamed part of an
  answer is retried; a marker line, and the partial text is not part of the answer;
- status ``waiting_model``: not terminal, "waiting for the model endpoint…".

And for real: a simulator turn shows ``[model: leaflab-sim]``.
"""

from __future__ import annotations

import io
import json
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import redis
from rich.console import Console
from sqlalchemy.orm import Session, sessionmaker

from services.cli.client import LeaflabClient
from services.cli.watch import watch_job
from services.cli.watch_state import WatchState
from services.common.contracts.keys import job_stream
from services.common.models import Job
from tests.cli.conftest import HOSTILE, run_cli, visible
from tests.conftest import Stack
from tests.fixtures.builders import client_for, make_user
from tests.fixtures.processes import RunningStack

PARTIAL = "Half an answ"
EVENTS: list[tuple[str, dict[str, Any]]] = [
    ("status", {"status": "running"}),
    ("token", {"text": PARTIAL}),
    ("model_retry", {"attempt": 2, "error": "stream stalled " + HOSTILE, "wait_s": 0.5}),
    ("status", {"status": "waiting_model", "error": "connection refused"}),
    ("status", {"status": "running"}),
    ("token", {"text": "The whole answer."}),
    ("model", {"model": "gemma-3-270m"}),
    ("model", {"model": "gemma-3-270m"}),  # the same model again: nothing new to say
    ("model", {"model": "qwen-fallback"}),  # another model answered: said again
    ("final", {"status": "succeeded", "result": {"content": "The whole answer."}}),
]


def _parked_turn(factory: sessionmaker[Session], user_id: uuid.UUID) -> str:
    with factory() as db, db.begin():
        job = Job(
            user_id=user_id,
            kind="turn",
            status="running",
            input={"content": "go"},
            lease_owner="test",
            lease_until=datetime.now(UTC) + timedelta(hours=1),
        )
        db.add(job)
        db.flush()
        return str(job.id)


def _play(stack: Stack, factory: sessionmaker[Session], job_id: str) -> None:
    r = redis.Redis.from_url(stack.redis_url)
    base = int(time.time() * 1000)
    for i, (kind, data) in enumerate(EVENTS):
        if kind == "final":
            with factory() as db, db.begin():
                job = db.get(Job, uuid.UUID(job_id))
                assert job is not None
                job.status = "succeeded"
        fields = {"type": kind, "data": json.dumps(data)}
        r.xadd(job_stream(job_id), fields, id=f"{base + i * 100}-0")  # type: ignore[arg-type]


def test_state_drops_the_retried_attempts_text_and_tracks_waiting() -> None:
    st = WatchState()
    for i, (kind, data) in enumerate(EVENTS[:5]):
        st.apply({"id": f"{1000 + i}-0", "event": kind, "data": data})
        if kind == "model_retry":
            assert st.text == "" and st.dropped == PARTIAL and st.retries == 1
        if kind == "status" and data["status"] == "waiting_model":
            assert st.status == "waiting_model" and st.waiting == "connection refused"
    assert st.status == "running" and st.waiting is None
    for kind, data in EVENTS[5:7]:
        st.apply({"event": kind, "data": data})
    assert st.text == "The whole answer." and st.model == "gemma-3-270m"


class TestWatchModelEvents:
    def test_plain_lines(
        self, lab: RunningStack, stack: Stack, session_factory: sessionmaker[Session]
    ) -> None:
        user = make_user(session_factory)
        job_id = _parked_turn(session_factory, user.id)
        _play(stack, session_factory, job_id)
        out = run_cli(lab.url, user.key, "watch", job_id).stdout
        assert "\x1b" not in out
        lines = out.splitlines()
        retry = next(line for line in lines if "retrying model call" in line)
        assert retry.startswith("  [retrying model call (attempt 2): stream stalled \\x1b[31mred")
        assert retry.endswith(f"; in 0.5s; the {len(PARTIAL)} chars streamed above are dropped]")
        assert "[waiting for the model endpoint… (connection refused)]" in lines
        assert lines.count("  [model: gemma-3-270m]") == 1
        assert "  [model: qwen-fallback]" in lines
        # The order a reader follows: the dropped text, its marker, the wait, the answer.
        order = [PARTIAL, "retrying model call", "waiting for the model", "The whole answer."]
        positions = [out.index(s) for s in order]
        assert positions == sorted(positions)
        assert "[succeeded] after 0 tool call(s)" in lines

    def test_live_view(
        self, lab: RunningStack, stack: Stack, session_factory: sessionmaker[Session]
    ) -> None:
        user = make_user(session_factory)
        job_id = _parked_turn(session_factory, user.id)
        _play(stack, session_factory, job_id)
        buf = io.StringIO()
        console = Console(file=buf, force_terminal=True, width=160, color_system="standard")
        job = watch_job(LeaflabClient(lab.url, user.key), job_id, console=console)
        assert job["status"] == "succeeded"
        shown = visible(buf.getvalue())
        assert "[retrying model call (attempt 2): stream stalled" in shown
        assert "[waiting for the model endpoint… (connection refused)]" in shown
        assert shown.count("[model: gemma-3-270m]") == 1 and "[model: qwen-fallback]" in shown
        # The unfinished line of the failed attempt never reaches the transcript.
        transcript = shown.split("[retrying model call")[1]
        assert PARTIAL not in transcript


def test_a_real_turn_says_which_model_answered(
    lab: RunningStack, session_factory: sessionmaker[Session]
) -> None:
    user = make_user(session_factory)
    client = client_for(lab.url, user)
    session = client.post("/v1/sessions", json={}).json()
    lab.sim.set_script(session["id"], {"replies": [{"content": "Hello."}]})
    posted = client.post(f"/v1/sessions/{session['id']}/messages", json={"content": "hi"})
    out = run_cli(lab.url, user.key, "watch", posted.json()["job_id"]).stdout
    assert "  [model: leaflab-sim]" in out.splitlines()
    assert out.index("Hello.") < out.index("[model: leaflab-sim]")
