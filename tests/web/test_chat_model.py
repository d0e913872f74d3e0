"""The chat page and the model: the simulator banner, the model under each answer, a
retried model call and a job waiting for its endpoint.

The banner is checked over plain HTTP (logged in through the real form), so it runs
without a browser; the rest needs Chromium (missing, it fails the run unless LEAFLAB_SKIP_BROWSER=1,
as every page test does: tests/fixtures/opt_outs.py).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
import redis
from playwright.sync_api import BrowserContext, expect
from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts.keys import job_stream
from services.common.models import Job
from tests.conftest import Stack
from tests.fixtures.builders import TestUser, client_for, make_user
from tests.fixtures.processes import RunningStack, Services, running_stack
from tests.web.browser import login


def _page_html(url: str, user: TestUser) -> str:
    """GET / as a browser would after logging in with the form (CSRF cookie and token)."""
    with httpx.Client(base_url=url, timeout=30) as web:
        form = web.get("/login").text
        match = re.search(r'name="csrf_token" value="([^"]+)"', form)
        assert match, form
        web.post("/login", data={"api_key": user.key, "csrf_token": match.group(1), "next": "/"})
        page = web.get("/")
        assert page.status_code == 200 and 'id="chat-app"' in page.text, page.text[:500]
        return page.text


def test_banner_only_when_the_model_is_simulated(
    stack: Stack, tmp_path: Path, session_factory: sessionmaker[Session]
) -> None:
    user = make_user(session_factory)
    svc = Services(stack, tmp_path)
    try:
        svc.env["LEAFLAB_MODEL_SIMULATED"] = "true"
        simulated = _page_html(svc.api(), user)
        svc.env["LEAFLAB_MODEL_SIMULATED"] = "false"
        real = _page_html(svc.api(), user)
    finally:
        svc.stop()
    assert 'data-testid="sim-banner"' in simulated
    assert "Simulated answers" in simulated and "leaflab up --model-url" in simulated
    assert "--local-model" in simulated
    assert 'data-testid="sim-banner"' not in real


@pytest.fixture(scope="module")
def sim_lab(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    env = {"LEAFLAB_MODEL_SIMULATED": "true"}
    with running_stack(stack, tmp_path_factory.mktemp("chat_model"), env=env) as lab:
        yield lab


def test_each_answer_names_its_model_live_and_after_reload(
    sim_lab: RunningStack, context: BrowserContext, session_factory: sessionmaker[Session]
) -> None:
    user = make_user(session_factory)
    with client_for(sim_lab.url, user) as client:
        session = client.post("/v1/sessions", json={"title": "which model"}).json()["id"]
    sim_lab.sim.set_script(session, {"latency_ms": 20, "replies": [{"content": "Hello there."}]})
    page = login(context, sim_lab.url, user.key, f"/?session={session}")
    expect(page.get_by_test_id("sim-banner")).to_be_visible()
    page.get_by_test_id("chat-input").fill("hi")
    page.get_by_test_id("chat-send").click()
    answer = page.get_by_test_id("message-assistant").last
    expect(answer).to_contain_text("Hello there.")
    expect(answer.get_by_test_id("message-model")).to_have_text("model: leaflab-sim")
    page.reload()
    again = page.get_by_test_id("message-assistant").last
    expect(again.get_by_test_id("message-model")).to_have_text("model: leaflab-sim")


def _parked_turn(factory: sessionmaker[Session], user_id: uuid.UUID, session_id: str) -> str:
    with factory() as db, db.begin():
        job = Job(
            user_id=user_id,
            session_id=uuid.UUID(session_id),
            kind="turn",
            status="running",
            input={"content": "go"},
            lease_owner="test",
            lease_until=datetime.now(UTC) + timedelta(hours=1),
        )
        db.add(job)
        db.flush()
        return str(job.id)


def test_a_retried_call_drops_its_partial_text_and_waiting_is_shown(
    sim_lab: RunningStack,
    stack: Stack,
    context: BrowserContext,
    session_factory: sessionmaker[Session],
) -> None:
    user = make_user(session_factory)
    with client_for(sim_lab.url, user) as client:
        session = client.post("/v1/sessions", json={"title": "retry"}).json()["id"]
    job_id = _parked_turn(session_factory, user.id, session)
    r = redis.Redis.from_url(stack.redis_url)

    def publish(kind: str, data: dict[str, object]) -> None:
        r.xadd(job_stream(job_id), {"type": kind, "data": json.dumps(data)})

    publish("status", {"status": "running"})
    publish("token", {"text": "Half an answ"})
    page = login(context, sim_lab.url, user.key, f"/?session={session}")
    expect(page.get_by_test_id("message-assistant").last).to_contain_text("Half an answ")
    publish("model_retry", {"attempt": 2, "error": "stream stalled", "wait_s": 0.5})
    expect(page.get_by_test_id("model-retry")).to_contain_text("attempt 2")
    expect(page.get_by_text("Half an answ")).to_have_count(0)
    publish("status", {"status": "waiting_model", "error": "connection refused"})
    expect(page.get_by_test_id("turn-status")).to_have_text(
        "waiting for the model endpoint… (connection refused)"
    )
    publish("status", {"status": "running"})
    publish("token", {"text": "The whole answer."})
    publish("model", {"model": "gemma-3-270m"})
    time.sleep(0.2)
    answer = page.get_by_test_id("message-assistant").last
    expect(answer).to_contain_text("The whole answer.")
    expect(answer.get_by_test_id("message-model")).to_have_text("model: gemma-3-270m")
