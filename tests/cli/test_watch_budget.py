"""`leaflab watch` through a budget pause: parked is not finished.

Real processes (simulator, API, worker) and the CLI as its own process. The
user's budget is 0, so the turn pauses (status budget_exhausted) before its
model call; while paused the watch must still run and say how to get out of
it; an admin's raise (PUT /v1/admin/budgets) resumes the job, and the watch
prints the answer and `[succeeded]`, each marker on a line of its own, and
exits 0 only then.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import httpx
import pytest
from sqlalchemy.orm import Session, sessionmaker

from tests.cli.cli_process import CliProcess
from tests.cli.conftest import visible
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import RunningStack

if TYPE_CHECKING:  # imported for its name only: pytest would try to collect a Test* class
    from tests.fixtures.builders import TestUser

ANSWER = ["The budget was raised, so here is the answer.", "It has a second line."]
PAUSE = (
    "[budget_exhausted] paused: your budget is used up; an admin can raise it "
    "(leaflab admin budget set --user EMAIL --usd AMOUNT); still watching"
)
RESUMED = "[running] resumed after the budget was raised"


class PausedTurn:
    def __init__(self, lab: RunningStack, factory: sessionmaker[Session]) -> None:
        self.admin = client_for(lab.url, make_user(factory, admin=True))
        self.user: TestUser = make_user(factory)
        self.admin.put("/v1/admin/budgets", json={"user_email": self.user.email, "usd": 0})
        self.client: httpx.Client = client_for(lab.url, self.user)
        session = self.client.post("/v1/sessions", json={}).json()
        lab.sim.set_script(session["id"], {"replies": [{"content": "\n".join(ANSWER)}]})
        reply = self.client.post(f"/v1/sessions/{session['id']}/messages", json={"content": "hi"})
        self.job_id: str = reply.json()["job_id"]

    def raise_budget(self) -> None:
        self.admin.put("/v1/admin/budgets", json={"user_email": self.user.email, "usd": 5})


@pytest.fixture
def paused(lab: RunningStack, session_factory: sessionmaker[Session]) -> PausedTurn:
    return PausedTurn(lab, session_factory)


@pytest.fixture
def processes() -> Iterator[list[CliProcess]]:
    started: list[CliProcess] = []
    yield started
    for proc in started:
        proc.stop()


def _watch_through_the_raise(
    lab: RunningStack, paused: PausedTurn, started: list[CliProcess], *, terminal: bool
) -> tuple[int, str]:
    watcher = CliProcess(lab.url, paused.user.key, "watch", paused.job_id, terminal=terminal)
    started.append(watcher)
    watcher.wait_for(lambda out: PAUSE in visible(out))
    assert wait_job(paused.client, paused.job_id, statuses=("budget_exhausted",))
    time.sleep(2)  # a watch that stops at the pause has exited by now
    assert watcher.proc.poll() is None, watcher.output
    paused.raise_budget()
    return watcher.finish()


class TestPlainWatchThroughABudgetPause:
    def test_pause_line_then_the_resumed_answer_then_succeeded_each_on_its_own_line(
        self, lab: RunningStack, paused: PausedTurn, processes: list[CliProcess]
    ) -> None:
        code, out = _watch_through_the_raise(lab, paused, processes, terminal=False)
        assert code == 0, out
        lines = out.splitlines()
        assert PAUSE in lines, out
        assert RESUMED in lines, out
        finals = [line for line in lines if line.startswith("[succeeded]")]
        assert finals == ["[succeeded] after 0 tool call(s)"], out
        # The order a reader follows: paused, resumed, the answer, then how it ended.
        at = [lines.index(PAUSE), lines.index(RESUMED), lines.index(ANSWER[0])]
        at += [lines.index(ANSWER[1]), lines.index(finals[0])]
        assert at == sorted(at), out
        # A status marker never shares a line with another marker or with the answer.
        for line in lines:
            if line.startswith("["):
                assert line.count("[budget_exhausted]") + line.count("[succeeded]") <= 1, out
                assert not any(part in line for part in ANSWER), out
        assert "tokens 0 in" not in out, out  # the resumed call's usage is the job's
        assert paused.client.get(f"/v1/jobs/{paused.job_id}").json()["status"] == "succeeded"

    def test_no_wait_stops_at_the_pause_and_exits_1(
        self, lab: RunningStack, paused: PausedTurn, processes: list[CliProcess]
    ) -> None:
        watcher = CliProcess(lab.url, paused.user.key, "watch", paused.job_id, "--no-wait")
        processes.append(watcher)
        code, out = watcher.finish(timeout_s=60)
        assert code == 1, out
        assert out.splitlines().count(PAUSE) == 1, out
        assert "[succeeded]" not in out, out


class TestLiveWatchThroughABudgetPause:
    def test_the_terminal_view_says_paused_then_prints_the_answer_and_succeeded(
        self, lab: RunningStack, paused: PausedTurn, processes: list[CliProcess]
    ) -> None:
        code, out = _watch_through_the_raise(lab, paused, processes, terminal=True)
        assert code == 0, out
        shown = visible(out)
        lines = [line.strip() for line in shown.splitlines()]
        assert PAUSE in lines, shown
        assert RESUMED in lines and ANSWER[0] in lines and ANSWER[1] in lines, shown
        assert lines.index(PAUSE) < lines.index(RESUMED) < lines.index(ANSWER[0]), shown
        summary = [line for line in lines if line.startswith("[succeeded]")]
        assert len(summary) == 1 and summary[0].startswith("[succeeded] after 0 tool call(s)")
        assert lines.index(ANSWER[1]) < lines.index(summary[0]), shown
