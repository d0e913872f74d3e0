"""`leaflab watch`: plain lines in a pipe and the rich live view on a terminal,
for a scripted agent turn (tokens, tool calls, todo) and a survey's progress."""

from __future__ import annotations

import io
import json
import re
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
import redis
from rich.console import Console
from sqlalchemy.orm import Session, sessionmaker

from services.cli.client import LeaflabClient
from services.cli.term.literal import literal
from services.cli.watch import watch_job
from services.common.contracts.keys import job_stream
from services.common.models import Job
from tests.cli.conftest import HOSTILE, run_cli, visible
from tests.conftest import Stack
from tests.fixtures.builders import client_for, make_user
from tests.fixtures.processes import RunningStack

ANSWER = "The answer: [bold]x[/bold] " + HOSTILE
TURN_SCRIPT = {
    "latency_ms": 150,  # slow enough that a watcher sees the turn while it runs
    "replies": [
        {
            "tool_calls": [
                {
                    "name": "todo",
                    "arguments": {
                        "items": [
                            {"content": HOSTILE, "status": "completed"},
                            {"content": "write the answer", "status": "in_progress"},
                        ]
                    },
                }
            ]
        },
        {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}]},
        {"content": ANSWER + "\nsecond line"},
    ],
}
USAGE = re.compile(r"tokens ([\d,]+) in · ([\d,]+) out \(([\d,]+) cached\) · cost \$(\d+\.\d{4})")


def _turn(lab: RunningStack, client: httpx.Client) -> str:
    session = client.post("/v1/sessions", json={}).json()
    lab.sim.set_script(session["id"], TURN_SCRIPT)
    resp = client.post(f"/v1/sessions/{session['id']}/messages", json={"content": "go"})
    assert resp.status_code == 202, resp.text
    return str(resp.json()["job_id"])


def _usage_shown(text: str, job: dict[str, Any]) -> None:
    *_, found = USAGE.finditer(text)  # the last figures shown are the job's final ones
    usage = job["usage"]
    assert int(found.group(1).replace(",", "")) == usage["input_tokens"] > 0
    assert int(found.group(2).replace(",", "")) == usage["output_tokens"] > 0
    assert found.group(4) == f"{job['cost_usd']:.4f}"


class TestWatchTurn:
    def test_live_view_while_the_turn_runs(
        self, lab: RunningStack, session_factory: sessionmaker[Session]
    ) -> None:
        user = make_user(session_factory)
        job_id = _turn(lab, client_for(lab.url, user))
        buf = io.StringIO()
        console = Console(file=buf, force_terminal=True, width=100, color_system="standard")
        job = watch_job(LeaflabClient(lab.url, user.key), job_id, console=console)
        assert job["status"] == "succeeded"
        out = buf.getvalue()
        assert "\x1b[31mred" not in out and "\x1b]0;" not in out  # data never drives the tty
        shown = visible(out)
        assert "\x1b" not in shown and "\rhidden" not in shown
        assert re.search(r"✓ todo succeeded \(\d+\.\d\ds\)", shown)
        assert re.search(r"✓ glob succeeded \(\d+\.\d\ds\)", shown)
        assert f"job {job_id} turn · running" in shown  # the live header, mid-run
        assert "todo 1/2" in shown and "write the answer" in shown
        assert literal(HOSTILE) in shown  # the todo item and the answer, escaped
        assert "The answer: [bold]x[/bold] \\x1b[31mred" in shown and "second line" in shown
        assert "[succeeded] after 2 tool call(s)" in shown
        _usage_shown(shown, job)

    def test_plain_lines_in_a_pipe(
        self, lab: RunningStack, session_factory: sessionmaker[Session]
    ) -> None:
        user = make_user(session_factory)
        job_id = _turn(lab, client_for(lab.url, user))
        result = run_cli(lab.url, user.key, "watch", job_id)
        out = result.stdout
        assert "\x1b" not in out and "\r" not in out
        assert "[running]" in out
        # The todo list came between the tool's start and end: its end gets its own line.
        todo = f"  → todo …\n  todo 1/2:\n    [x] {literal(HOSTILE)}\n    [>] write the answer\n"
        assert re.search(re.escape(todo) + r"  ← todo succeeded \(\d+\.\d\ds\)\n", out)
        assert re.search(r"\n  → glob … succeeded \(\d+\.\d\ds\)\n", out)
        assert "\nThe answer: [bold]x[/bold] \\x1b[31mred" in out and "\nsecond line" in out
        assert "[succeeded] after 2 tool call(s)\n" in out
        job = client_for(lab.url, user).get(f"/v1/jobs/{job_id}").json()
        _usage_shown(out.splitlines()[-1], job)


# A survey as the worker reports it: `progress` events with the stage and counters.
# Event ids carry the publish time, one second apart, so the ETA is known exactly.
WRITING = {"papers_found": 8, "papers_read": 8, "sections_total": 4}
SURVEY_EVENTS: list[tuple[str, dict[str, Any]]] = [
    ("status", {"status": "running"}),
    ("progress", {"stage": "plan", "papers_found": 0, "papers_read": 0, "cost_usd": 0.001}),
    ("progress", {"stage": "gather", "papers_found": 8, "papers_read": 0, "cost_usd": 0.002}),
    ("progress", {"stage": "read", "papers_found": 8, "papers_read": 0, "cost_usd": 0.003}),
    ("progress", {"stage": "read", "papers_found": 8, "papers_read": 2, "cost_usd": 0.005}),
    ("progress", {"stage": "read", "papers_found": 8, "papers_read": 4, "cost_usd": 0.007}),
    (
        "progress",
        {"stage": "outline", "papers_found": 8, "papers_read": 8, "sections_total": 4},
    ),
    ("progress", {"stage": "write", **WRITING, "sections_written": 2, "cost_usd": 0.02}),
    ("progress", {"stage": "assemble", **WRITING, "sections_written": 4, "cost_usd": 0.0321}),
]


def _survey_job(session_factory: sessionmaker[Session], user_id: uuid.UUID) -> str:
    """A survey job row that no worker will take (leased far ahead): the test plays its events."""
    with session_factory() as db, db.begin():
        job = Job(
            user_id=user_id,
            kind="survey",
            status="running",
            input={"topic": HOSTILE},
            lease_owner="test",
            lease_until=datetime.now(UTC) + timedelta(hours=1),
        )
        db.add(job)
        db.flush()
        return str(job.id)


def _play(
    stack: Stack, session_factory: sessionmaker[Session], job_id: str, pause_s: float
) -> None:
    r = redis.Redis.from_url(stack.redis_url)
    base = int(time.time() * 1000)

    def publish(second: int, kind: str, data: dict[str, Any]) -> None:
        fields = {"type": kind, "data": json.dumps(data)}
        r.xadd(job_stream(job_id), fields, id=f"{base + second * 1000}-0")  # type: ignore[arg-type]

    for second, (kind, data) in enumerate(SURVEY_EVENTS):
        publish(second, kind, data)
        time.sleep(pause_s)
    with session_factory() as db, db.begin():
        job = db.get(Job, uuid.UUID(job_id))
        assert job is not None
        job.status, job.cost_usd = "succeeded", Decimal("0.0321")
    publish(len(SURVEY_EVENTS), "final", {"status": "succeeded"})


class TestWatchSurvey:
    def test_plain_progress_lines_with_stage_counts_cost_and_eta(
        self, lab: RunningStack, stack: Stack, session_factory: sessionmaker[Session]
    ) -> None:
        user = make_user(session_factory)
        job_id = _survey_job(session_factory, user.id)
        _play(stack, session_factory, job_id, pause_s=0)
        out = run_cli(lab.url, user.key, "watch", job_id).stdout
        lines = out.splitlines()
        assert "[plan (1/7)] papers 0/0 read · sections 0/0 written · $0.0010" in lines
        # Papers were found at 2 s: 2 read by 4 s leaves 6 at 1 s each, 4 by 5 s leaves
        # 4 at 0.75 s; sections planned at 6 s, 2 written by 7 s: 2 left at 0.5 s.
        assert "[read (3/7)] papers 2/8 read · sections 0/0 written · $0.0050 · ETA 6s" in lines
        assert "[read (3/7)] papers 4/8 read · sections 0/0 written · $0.0070 · ETA 3s" in lines
        assert "[write (5/7)] papers 8/8 read · sections 2/4 written · $0.0200 · ETA 1s" in lines
        assert "[succeeded] after 0 tool call(s)" in lines
        assert lines[-1].endswith("cost $0.0321")

    def test_live_bars_follow_the_stages(
        self, lab: RunningStack, stack: Stack, session_factory: sessionmaker[Session]
    ) -> None:
        user = make_user(session_factory)
        job_id = _survey_job(session_factory, user.id)
        player = threading.Thread(target=_play, args=(stack, session_factory, job_id, 0.4))
        buf = io.StringIO()
        console = Console(file=buf, force_terminal=True, width=100, color_system="standard")
        player.start()
        try:
            job = watch_job(LeaflabClient(lab.url, user.key), job_id, console=console)
        finally:
            player.join()
        assert job["status"] == "succeeded"
        shown = visible(buf.getvalue())
        assert f"job {job_id} survey · running · stage read (3/7)" in shown
        assert re.search(r"papers read\s+\S+\s+4/8\s+ETA 3s", shown)
        assert re.search(r"sections written\s+\S+\s+2/4\s+ETA 1s", shown)
        assert "stage assemble (7/7)" in shown
        assert re.search(r"sections written\s+\S+\s+4/4\s+done", shown)
        assert "[succeeded] after 0 tool call(s)" in shown and "cost $0.0321" in shown


class TestWatchBatch:
    def test_a_batchs_progress_reads_as_words_not_a_dictionary(
        self, lab: RunningStack, stack: Stack, session_factory: sessionmaker[Session]
    ) -> None:
        user = make_user(session_factory)
        with session_factory() as db, db.begin():
            job = Job(
                user_id=user.id,
                kind="batch",
                status="running",
                input={"tasks": [{"content": "a"}, {"content": "b"}, {"content": "c"}]},
                lease_owner="test",
                lease_until=datetime.now(UTC) + timedelta(hours=1),
            )
            db.add(job)
            db.flush()
            job_id = str(job.id)
        r = redis.Redis.from_url(stack.redis_url)
        base = int(time.time() * 1000)
        events = [
            ("status", {"status": "running", "progress": {"total": 3, "succeeded": 1,
                                                          "failed": 0, "running": 2}}),
            ("status", {"status": "running", "progress": {"total": 3, "succeeded": 2,
                                                          "failed": 1, "running": 0}}),
        ]  # fmt: skip
        for n, (kind, data) in enumerate(events):
            fields = {"type": kind, "data": json.dumps(data)}
            r.xadd(job_stream(job_id), fields, id=f"{base + n}-0")  # type: ignore[arg-type]
        with session_factory() as db, db.begin():
            row = db.get(Job, uuid.UUID(job_id))
            assert row is not None
            row.status = "succeeded"
        final = {"type": "final", "data": json.dumps({"status": "succeeded"})}
        r.xadd(job_stream(job_id), final, id=f"{base + 9}-0")  # type: ignore[arg-type]
        lines = run_cli(lab.url, user.key, "watch", job_id).stdout.splitlines()
        assert "[running] 3 tasks: 1 succeeded, 2 running" in lines, lines
        assert "[running] 3 tasks: 2 succeeded, 1 failed" in lines, lines
        # The last line agrees with the progress before it (the final event has no summary).
        assert "[succeeded] 3 tasks: 2 succeeded, 1 failed" in lines, lines
        assert not any("{" in line for line in lines), lines
