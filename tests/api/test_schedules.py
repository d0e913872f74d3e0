"""Schedules over HTTP and the CLI, with real API processes, a worker and the simulator.

What a user sees: bad cron, timezone or job body refused with a clear 422 (or
413) and nothing stored; their schedules listed, another user's invisible and
not removable; a due slot run as a normal job linked to its schedule (listed
under its runs) by whichever of two API processes gets there first, once;
pause and resume by the owner or an admin.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime

import pytest
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from services.api.schedules.cron import parse
from services.common.models import Schedule
from tests.api.schedule_builders import (
    no_schedules_left,  # noqa: F401 - autouse fixture
    runs_of,
)
from tests.fixtures.builders import client_for, make_project, make_user, wait_job
from tests.fixtures.processes import Services

pytestmark = pytest.mark.timeout(240)

YEARLY = "0 0 1 1 *"  # its next real slot is months away: only a test's nudge makes one due
TURN = {"kind": "turn", "input": {"content": "anything new on enzymes?"}}


def _make_due(factory: sessionmaker[Session], schedule_id: str) -> datetime:
    """Move the schedule's next slot to its latest past one, as if the API had been
    down when it came."""
    slot = parse(YEARLY, "UTC").latest_at_or_before(datetime.now(UTC))
    with factory() as db, db.begin():
        db.execute(
            update(Schedule).where(Schedule.id == uuid.UUID(schedule_id)).values(next_slot=slot)
        )
    return slot


def _until(check: object, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.2)
    raise AssertionError("timed out")


class TestScheduleApi:
    def test_bad_input_gets_clear_errors_and_nothing_is_stored(
        self, services: Services, session_factory: sessionmaker[Session]
    ) -> None:
        url = services.api()
        alice, bob = make_user(session_factory), make_user(session_factory)
        client = client_for(url, alice)
        bad = [
            ({"cron": "61 * * * *", "job": TURN}, 422, "invalid_cron"),
            ({"cron": "every monday", "job": TURN}, 422, "invalid_cron"),
            ({"cron": "0 9 * * * 5", "job": TURN}, 422, "invalid_cron"),
            ({"cron": "0 0 31 2 *", "job": TURN}, 422, "invalid_cron"),
            ({"cron": "0 9 * * 1", "timezone": "Mars/Olympus", "job": TURN}, 422,
             "unknown_timezone"),
            ({"cron": "*/1 * * * *", "job": TURN}, 422, "too_frequent"),
            ({"cron": "0,1 9 * * *", "job": TURN}, 422, "too_frequent"),
            ({"cron": "@daily", "job": {"kind": "dance", "input": {}}}, 422, None),
            ({"cron": "@daily", "job": {"kind": "turn", "input": {}}}, 422, None),
            ({"cron": "@daily", "job": {"kind": "turn", "input": {"content": " "}}}, 422, None),
            ({"cron": "@daily", "job": TURN, "surprise": 1}, 422, None),
            ({"cron": "@daily"}, 422, None),
            ({"cron": "@daily", "job": {"kind": "turn", "input": {"content": "x" * 70_000}}},
             413, "too_large"),
            ({"cron": "@daily", "job": {**TURN, "session_id": str(uuid.uuid4())}}, 404, None),
        ]  # fmt: skip
        for body, status, code in bad:
            resp = client.post("/v1/schedules", json=body)
            assert resp.status_code == status, (body, resp.text)
            assert resp.json()["error"]["message"]
            if code:
                assert resp.json()["error"]["code"] == code, resp.text
        project = make_project(session_factory, bob)  # Alice is not a member
        resp = client.post(
            "/v1/schedules", json={"cron": "@daily", "job": TURN, "project": project}
        )
        assert resp.status_code == 404
        assert client.get("/v1/schedules").json() == {"items": []}

    def test_owners_see_and_change_their_schedules_and_nobody_else_does(
        self, services: Services, session_factory: sessionmaker[Session]
    ) -> None:
        url = services.api()
        alice, bob = make_user(session_factory), make_user(session_factory)
        admin = make_user(session_factory, admin=True)
        client, other = client_for(url, alice), client_for(url, bob)
        made = client.post(
            "/v1/schedules", json={"cron": "0 9 * * MON", "timezone": "Europe/Paris", "job": TURN}
        )
        assert made.status_code == 201, made.text
        sched = made.json()
        assert (sched["cron"], sched["timezone"], sched["paused"]) == (
            "0 9 * * MON",
            "Europe/Paris",
            False,
        )
        slot = datetime.fromisoformat(sched["next_slot"])
        assert (
            slot > datetime.now(UTC)
            and slot.astimezone(parse("@daily", "Europe/Paris").zone).hour == 9
        )
        assert [s["id"] for s in client.get("/v1/schedules").json()["items"]] == [sched["id"]]
        assert client.get(f"/v1/schedules/{sched['id']}/runs").json() == {"items": []}
        # Bob neither sees nor changes it; it is as if it did not exist.
        assert other.get("/v1/schedules").json() == {"items": []}
        for method, path in [
            ("GET", ""),
            ("GET", "/runs"),
            ("POST", "/pause"),
            ("POST", "/resume"),
            ("DELETE", ""),
        ]:
            resp = other.request(method, f"/v1/schedules/{sched['id']}{path}")
            assert resp.status_code == 404, (method, path, resp.text)
        # An admin pauses it (and lists every user's with all=true); Alice resumes it.
        boss = client_for(url, admin)
        assert sched["id"] in [s["id"] for s in boss.get("/v1/schedules?all=true").json()["items"]]
        assert boss.post(f"/v1/schedules/{sched['id']}/pause").json()["paused"] is True
        assert client.get(f"/v1/schedules/{sched['id']}").json()["paused"] is True
        assert client.post(f"/v1/schedules/{sched['id']}/resume").json()["paused"] is False
        assert client.delete(f"/v1/schedules/{sched['id']}").status_code == 204
        assert client.get(f"/v1/schedules/{sched['id']}").status_code == 404


class TestFiringProcesses:
    def test_a_due_slot_runs_once_as_a_job_linked_to_it_whichever_api_process_fires(
        self, services: Services, session_factory: sessionmaker[Session], isolated_redis_url: str
    ) -> None:
        services.env.update(
            {"LEAFLAB_REDIS_URL": isolated_redis_url, "LEAFLAB_SCHEDULE_POLL_S": "0.1"}
        )
        services.simulator(script={"latency_ms": 10, "replies": [{"content": "nothing new"}]})
        url, _second = services.api(), services.api()  # two firing loops
        alice = make_user(session_factory)
        client = client_for(url, alice)
        ids = [
            client.post("/v1/schedules", json={"cron": YEARLY, "job": TURN}).json()["id"]
            for _ in range(6)
        ]
        slots = {sid: _make_due(session_factory, sid) for sid in ids}
        _until(lambda: all(runs_of(session_factory, uuid.UUID(s)) for s in ids))
        time.sleep(1.5)  # both loops polled many more times meanwhile
        for sid in ids:
            runs = runs_of(session_factory, uuid.UUID(sid))
            assert [r.schedule_slot for r in runs] == [slots[sid]]
            shown = client.get(f"/v1/schedules/{sid}").json()
            assert shown["last_error"] is None
            assert datetime.fromisoformat(shown["last_slot"]) == slots[sid]
            assert datetime.fromisoformat(shown["next_slot"]) > datetime.now(UTC)
        services.worker()
        (run,) = client.get(f"/v1/schedules/{ids[0]}/runs").json()["items"]
        assert run["kind"] == "turn" and run["input"] == TURN["input"]
        assert wait_job(client, run["id"], timeout_s=120)["status"] == "succeeded"


class TestCli:
    def test_add_list_pause_resume_runs_rm_and_a_bad_cron(
        self, services: Services, session_factory: sessionmaker[Session]
    ) -> None:
        url = services.api()
        alice = make_user(session_factory)

        def leaflab(*args: str) -> subprocess.CompletedProcess[str]:
            env = {**os.environ, "LEAFLAB_URL": url, "LEAFLAB_API_KEY": alice.key}
            argv = [sys.executable, "-m", "services.cli.main", "schedule", *args]
            return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)

        added = leaflab("add", "0 9 * * MON", "--timezone", "Europe/Paris", "--survey", "enzymes")
        assert added.returncode == 0, added.stderr
        sid = added.stdout.split()[1]
        assert "first run:" in added.stdout
        listed = leaflab("list")
        assert sid in listed.stdout and "survey: enzymes" in listed.stdout
        assert leaflab("pause", sid).returncode == 0
        assert "paused" in leaflab("list").stdout
        resumed = leaflab("resume", sid)
        assert resumed.returncode == 0 and "next run" in resumed.stdout
        assert leaflab("runs", sid).stdout.strip() == "no runs yet"
        bad = leaflab("add", "61 * * * *", "--turn", "hi")
        assert bad.returncode != 0 and "invalid_cron" in bad.stderr
        both = leaflab("add", "@daily", "--turn", "hi", "--survey", "x")
        assert both.returncode == 2 and "exactly one of" in both.stderr
        assert leaflab("rm", sid).returncode == 0
        assert leaflab("list").stdout.strip() == "no schedules"
