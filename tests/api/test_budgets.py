"""Budgets through the API: admins set and read them, members see what is left and are
refused the admin routes, and a job paused by its budget resumes when it is raised."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import redis
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts.keys import job_stream
from services.common.events import decode_entry
from services.common.models import Budget, Job, JobStep
from tests.conftest import Stack
from tests.fixtures.builders import client_for, make_project, make_user, wait_job
from tests.fixtures.processes import RunningStack

EDITS = 5


def _edit_chain(latency_ms: int) -> dict[str, Any]:
    """Every edit fails (or corrupts the file) if any step runs twice or is skipped."""
    replies: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "n.txt", "content": "n=0\n"}}]}
    ]
    for i in range(EDITS):
        args = {"path": "n.txt", "old_string": f"n={i}\n", "new_string": f"n={i + 1}\n"}
        replies.append({"tool_calls": [{"name": "edit_file", "arguments": args}]})
    replies.append({"content": f"n reached {EDITS}"})
    return {"latency_ms": latency_ms, "replies": replies}


def _steps(factory: sessionmaker[Session], job_id: str) -> int:
    with factory() as db:
        return int(
            db.scalar(
                select(func.count())
                .select_from(JobStep)
                .where(JobStep.job_id == job_id, JobStep.status == "succeeded")
            )
            or 0
        )


def _events(stack: Stack, job_id: str) -> list[dict[str, Any]]:
    client = redis.Redis.from_url(stack.redis_url)
    return [decode_entry(i, f) for i, f in client.xrange(job_stream(job_id))]


class TestAdminRoutes:
    def test_members_get_403_and_bad_bodies_422(
        self, running: RunningStack, session_factory: sessionmaker[Session]
    ) -> None:
        member = client_for(running.url, make_user(session_factory))
        admin = client_for(running.url, make_user(session_factory, admin=True))
        target = make_user(session_factory)
        assert member.get("/v1/admin/budgets").status_code == 403
        assert member.get("/v1/admin/spend").status_code == 403
        put = member.put("/v1/admin/budgets", json={"user_email": target.email, "usd": 1})
        assert put.status_code == 403
        for bad in (
            {"usd": 5},  # no target
            {"user_email": target.email, "project": "p", "usd": 5},  # two targets
            {"user_email": target.email, "usd": -1},
            {"user_email": target.email, "usd": 5, "period": "weekly"},
            {"user_email": target.email, "usd": 5, "reset_day": 31},
            {"user_email": target.email, "usd": 5, "soft_threshold": 0},
            {"user_email": target.email, "usd": 5, "spent_usd": 0},  # not settable
        ):
            resp = admin.put("/v1/admin/budgets", json=bad)
            assert resp.status_code == 422, (bad, resp.text)
            assert resp.json()["error"]["message"]
        missing = admin.put("/v1/admin/budgets", json={"user_email": "no@lab.test", "usd": 5})
        assert missing.status_code == 404
        assert admin.get("/v1/admin/spend", params={"by": "planet"}).status_code == 422
        with session_factory() as db:
            assert db.scalar(select(Budget).where(Budget.user_id == target.id)) is None

    def test_set_list_and_remaining_on_submission(
        self, running: RunningStack, session_factory: sessionmaker[Session]
    ) -> None:
        admin = client_for(running.url, make_user(session_factory, admin=True))
        alice = make_user(session_factory)
        project = make_project(session_factory, alice)
        client = client_for(running.url, alice)
        none = client.post("/v1/jobs", json={"kind": "turn", "input": {"content": "hi"}})
        assert none.status_code == 202 and none.json()["budget"] is None
        set_user = admin.put(
            "/v1/admin/budgets",
            json={"user_email": alice.email, "usd": 50, "tokens": 1_000_000, "period": "monthly"},
        )
        assert set_user.status_code == 200, set_user.text
        assert set_user.json()["period_ends_at"] is not None
        admin.put("/v1/admin/budgets", json={"project": project, "usd": 5, "period": "total"})
        listed = admin.get("/v1/admin/budgets").json()["items"]
        assert {(b["scope"], b["user_email"] or b["project"]) for b in listed} >= {
            ("user", alice.email),
            ("project", project),
        }
        job = client.post(
            "/v1/jobs",
            json={"kind": "survey", "project": project, "input": {"topic": "enzymes"}},
        ).json()
        # The project's $5 is tighter than Alice's $50; tokens come from her budget.
        assert job["budget"]["usd_remaining"] <= 5
        assert job["budget"]["tokens_remaining"] <= 1_000_000
        assert job["estimate"]["model_calls"] > 0 and job["estimate"]["tokens"] > 0
        client.post(f"/v1/jobs/{job['id']}/cancel")


class TestPauseAndResume:
    def test_hard_limit_pauses_holding_no_lease_and_raise_resumes_exactly_once(
        self, running: RunningStack, session_factory: sessionmaker[Session], stack: Stack
    ) -> None:
        admin = client_for(running.url, make_user(session_factory, admin=True))
        bob = make_user(session_factory)
        client = client_for(running.url, bob)
        admin.put("/v1/admin/budgets", json={"user_email": bob.email, "usd": 10, "period": "total"})
        session = client.post("/v1/sessions", json={}).json()
        running.sim.set_script(session["id"], _edit_chain(latency_ms=200))
        job_id = client.post(
            f"/v1/sessions/{session['id']}/messages", json={"content": "count"}
        ).json()["job_id"]
        deadline = time.monotonic() + 60
        while _steps(session_factory, job_id) < 4:
            assert time.monotonic() < deadline, "job made no progress"
            time.sleep(0.05)
        # Cut the budget to nothing: the next model call cannot be reserved.
        cut = admin.put("/v1/admin/budgets", json={"user_email": bob.email, "usd": 0})
        assert cut.status_code == 200
        paused = wait_job(client, job_id, statuses=("budget_exhausted", "succeeded", "failed"))
        assert paused["status"] == "budget_exhausted", paused
        assert "budget exhausted" in paused["error"]
        with session_factory() as db:
            row = db.get(Job, job_id)
            assert row is not None and row.lease_owner is None and row.lease_until is None
        events = _events(stack, job_id)
        assert any(e["type"] == "budget" and e["data"]["state"] == "exhausted" for e in events)
        steps_when_paused = _steps(session_factory, job_id)
        time.sleep(1.5)
        assert _steps(session_factory, job_id) == steps_when_paused  # nothing runs while paused

        raised = admin.put("/v1/admin/budgets", json={"user_email": bob.email, "usd": 10})
        assert raised.json()["resumed_jobs"] == [job_id]
        done = wait_job(client, job_id)
        assert done["status"] == "succeeded", done
        assert done["result"]["content"] == f"n reached {EDITS}"
        steps = client.get(f"/v1/jobs/{job_id}/steps").json()["items"]
        tools = [s for s in steps if s["kind"] == "tool"]
        assert len(tools) == EDITS + 1
        assert all(s["status"] == "succeeded" and s["executions"] == 1 for s in tools), tools
        workspace = Path(running.services.env["LEAFLAB_HOME"]) / "workspaces" / session["id"]
        assert (workspace / "n.txt").read_text() == f"n={EDITS}\n"
        # The spend ledger has one row per model call that ran, and the budget agrees.
        spend = admin.get("/v1/admin/spend", params={"by": "user"}).json()["items"]
        mine = next(i for i in spend if i["key"] == bob.email)
        assert mine["calls"] == EDITS + 2
        budget = next(
            b
            for b in admin.get("/v1/admin/budgets").json()["items"]
            if b["user_email"] == bob.email
        )
        assert budget["reserved_usd"] == 0
        assert abs(budget["spent_usd"] - mine["cost_usd"]) < 1e-6

    def test_soft_threshold_routes_to_the_fast_tier_with_an_event(
        self, running: RunningStack, session_factory: sessionmaker[Session], stack: Stack
    ) -> None:
        admin = client_for(running.url, make_user(session_factory, admin=True))
        carol = make_user(session_factory)
        client = client_for(running.url, carol)
        admin.put(
            "/v1/admin/budgets",
            json={"user_email": carol.email, "usd": 10, "soft_threshold": 0.000001},
        )
        session = client.post("/v1/sessions", json={}).json()
        running.sim.set_script(session["id"], {"replies": [{"content": "a"}, {"content": "b"}]})
        for text in ("first", "second"):
            job_id = client.post(
                f"/v1/sessions/{session['id']}/messages", json={"content": text}
            ).json()["job_id"]
            assert wait_job(client, job_id)["status"] == "succeeded"
        # The first call spent something; from then on the budget is past its soft threshold.
        soft = [e for e in _events(stack, job_id) if e["type"] == "budget"]
        assert soft and soft[0]["data"]["state"] == "soft_limit", soft


def test_spend_since_filters_and_groups(
    running: RunningStack, session_factory: sessionmaker[Session]
) -> None:
    admin = client_for(running.url, make_user(session_factory, admin=True))
    for by in ("user", "project", "model", "day"):
        resp = admin.get("/v1/admin/spend", params={"by": by, "since": "2020-01-01"})
        assert resp.status_code == 200, resp.text
        assert resp.json()["by"] == by
    future = admin.get("/v1/admin/spend", params={"since": "2999-01-01T00:00:00Z"}).json()
    assert future["items"] == [] and future["total_usd"] == 0
    assert httpx.get(f"{running.url}/v1/admin/spend").status_code == 401


def test_a_job_with_no_budget_left_pauses_before_its_first_call_and_can_be_cancelled(
    running: RunningStack, session_factory: sessionmaker[Session]
) -> None:
    admin = client_for(running.url, make_user(session_factory, admin=True))
    erin = make_user(session_factory)
    client = client_for(running.url, erin)
    admin.put("/v1/admin/budgets", json={"user_email": erin.email, "usd": 0})
    job = client.post("/v1/jobs", json={"kind": "turn", "input": {"content": "hi"}}).json()
    assert job["budget"] == {"usd_remaining": 0.0, "tokens_remaining": None}
    paused = wait_job(client, job["id"], statuses=("budget_exhausted", "succeeded", "failed"))
    assert paused["status"] == "budget_exhausted" and "user budget" in paused["error"]
    assert client.get(f"/v1/jobs/{job['id']}/steps").json()["items"] == []  # no call was made
    cancelled = client.post(f"/v1/jobs/{job['id']}/cancel")
    assert cancelled.status_code == 202 and cancelled.json()["status"] == "cancelled"
    spend = admin.get("/v1/admin/spend").json()["items"]
    assert erin.email not in {i["key"] for i in spend}
