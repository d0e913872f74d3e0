"""Kill a real agent worker at each ledger boundary; a fresh worker resumes as promised.

Each case runs a job through the API on a worker started with
``LEAFLAB_FAILPOINTS=<point>=kill@N``, waits for that worker to SIGKILL itself
at the point, starts a clean worker and checks, through the API and the
workspace, the resume semantics the README promises for each tool class:
read-only tools run again, file edits take effect exactly once, and a sandbox
run cut off by the crash is reported to the model as interrupted, never run
again. Every case ends succeeded with exactly one ledger step and one message
per model call and tool call.

The sandbox class runs on the four points where its outcome differs (an
unrecorded model reply, before and after the execution, before the finish);
the points in between behave as for the other classes and cost a container
each.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.orm import Session, sessionmaker

from tests.conftest import Stack
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import Proc, Services, Simulator
from tests.sandbox.conftest import (  # noqa: F401  (session fixtures used here)
    docker_ready,
    sandbox_image,
    sandbox_settings,
    start_worker,
    stop_worker,
)

FINAL = "all done"


@dataclass(frozen=True)
class ToolClass:
    calls: list[dict[str, Any]]
    prepare: Callable[[Path], object] = lambda _ws: None
    # Points this class hits, each with the hit (N) to die on.
    points: dict[str, int] = field(default_factory=dict)


def _edit(i: int) -> dict[str, Any]:
    args = {"path": "counter.txt", "old_string": f"count={i}\n", "new_string": f"count={i + 1}\n"}
    return {"name": "edit_file", "arguments": args}


RUN_ONCE = "open('runs.txt', 'a').write('ran\\n')\nprint('ok')\n"
MODEL_AND_JOB = {
    "model.before_record": 2,
    "model.after_record": 2,
    "job.before_finish": 1,
    "job.after_finish": 1,
}
CLASSES = {
    "read_only": ToolClass(
        calls=[
            {"name": "read_file", "arguments": {"path": "notes.txt"}},
            {"name": "grep", "arguments": {"pattern": "beta"}},
        ],
        prepare=lambda ws: (ws / "notes.txt").write_text("alpha\nbeta\n"),
        points={**MODEL_AND_JOB, "tool.before_effect": 2, "tool.after_effect": 2},
    ),
    "file_edit": ToolClass(
        # Each edit finds only its own predecessor state: run twice, it fails.
        calls=[_edit(0), _edit(1)],
        prepare=lambda ws: (ws / "counter.txt").write_text("count=0\n"),
        points={
            **MODEL_AND_JOB,
            "edit.before_hash_record": 2,
            "edit.after_hash_record": 2,
            "tool.before_effect": 2,
            "tool.after_effect": 2,
        },
    ),
    "sandbox": ToolClass(
        calls=[{"name": "python", "arguments": {"code": RUN_ONCE}}],
        points={
            "model.before_record": 1,
            "tool.before_effect": 1,
            "tool.after_effect": 1,
            "job.before_finish": 1,
        },
    ),
}


@dataclass
class Rig:
    services: Services
    sim: Simulator
    url: str

    def worker(self, failpoints: str | None = None) -> Proc:
        """A clean agent worker, or a victim that dies at ``failpoints`` and never
        sweeps (so it touches no job but the one it is given)."""
        env = dict(self.services.env)
        if failpoints:
            self.services.env.update(
                {"LEAFLAB_FAILPOINTS": failpoints, "LEAFLAB_SWEEP_INTERVAL_S": "3600"}
            )
        try:
            return self.services.worker("victim" if failpoints else "successor", concurrency=4)
        finally:
            self.services.env = env


@pytest.fixture(scope="module")
def rig(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    svc = Services(stack, tmp_path_factory.mktemp("failpoints"))
    try:
        sim = svc.simulator()
        yield Rig(svc, sim, svc.api())
    finally:
        svc.stop()


@pytest.fixture(scope="module")
def sandbox_queue(
    rig: Rig,
    stack: Stack,
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[str]:
    """A sandbox worker of this module's own, on a private queue."""
    request.getfixturevalue("sandbox_image")  # Docker up, image built (tests/sandbox)
    queue = f"sandbox-fp-{uuid.uuid4().hex[:6]}"
    worker = start_worker(tmp_path_factory.mktemp("sbx"), stack.redis_url, queue)
    rig.services.env["LEAFLAB_SANDBOX_QUEUE"] = queue
    try:
        yield queue
    finally:
        stop_worker(worker)


def _workspace(session_id: str) -> Path:
    return Path(os.environ["LEAFLAB_HOME"]) / "workspaces" / session_id


@dataclass
class Crashed:
    """One job whose worker died at a failpoint, as a clean worker left it."""

    tool_class: str
    client: httpx.Client
    session_id: str
    job_id: str
    death: str | None  # why the victim did not die as planned, if it did not
    job: dict[str, Any] = field(default_factory=dict)


Resumed = dict[str, Crashed]  # by failpoint name


def _crash_all(rig: Rig, session_factory: sessionmaker[Session], tool_class: str) -> Resumed:
    """For one tool class: a job per failpoint, each on a victim that dies there
    (one victim at a time), then one clean worker that resumes them all."""
    case = CLASSES[tool_class]
    client = client_for(rig.url, make_user(session_factory))
    out: Resumed = {}
    for point, nth in case.points.items():
        session_id = client.post("/v1/sessions", json={}).json()["id"]
        workspace = _workspace(session_id)
        workspace.mkdir(parents=True, exist_ok=True)
        case.prepare(workspace)
        replies: list[dict[str, Any]] = [{"tool_calls": [call]} for call in case.calls]
        rig.sim.set_script(session_id, {"replies": [*replies, {"content": FINAL}]})
        spec = f"{point}=kill@{nth}"
        victim = rig.worker(failpoints=spec)
        body = {"content": f"exercise {tool_class}"}
        job_id = client.post(f"/v1/sessions/{session_id}/messages", json=body).json()["job_id"]
        out[point] = Crashed(tool_class, client, session_id, job_id, _death(victim, spec))
    successor = rig.worker()
    try:
        for item in out.values():
            item.job = wait_job(client, item.job_id, timeout_s=180)
    finally:
        successor.stop()
    return out


@pytest.fixture(scope="module")
def read_only_runs(rig: Rig, session_factory: sessionmaker[Session]) -> Resumed:
    return _crash_all(rig, session_factory, "read_only")


@pytest.fixture(scope="module")
def file_edit_runs(rig: Rig, session_factory: sessionmaker[Session]) -> Resumed:
    return _crash_all(rig, session_factory, "file_edit")


@pytest.fixture(scope="module")
def sandbox_runs(rig: Rig, session_factory: sessionmaker[Session], sandbox_queue: str) -> Resumed:
    return _crash_all(rig, session_factory, "sandbox")


def _death(victim: Proc, spec: str) -> str | None:
    try:
        code = victim.popen.wait(timeout=180)
    except subprocess.TimeoutExpired:
        victim.kill9()
        return f"failpoint {spec} never fired:\n{victim.log()[-3000:]}"
    if code != -9 or f"failpoint {spec.split('=')[0]} fired" not in victim.log():
        return f"worker exited {code}, not killed at {spec}:\n{victim.log()[-3000:]}"
    return None


class TestKilledAtEachLedgerBoundary:
    @pytest.mark.parametrize("point", list(CLASSES["read_only"].points))
    def test_read_only_tools_run_again(self, read_only_runs: Resumed, point: str) -> None:
        _check(read_only_runs[point], point)

    @pytest.mark.parametrize("point", list(CLASSES["file_edit"].points))
    def test_file_edits_take_effect_exactly_once(self, file_edit_runs: Resumed, point: str) -> None:
        _check(file_edit_runs[point], point)

    @pytest.mark.parametrize("point", list(CLASSES["sandbox"].points))
    def test_cut_off_sandbox_runs_are_reported_interrupted(
        self, sandbox_runs: Resumed, point: str
    ) -> None:
        _check(sandbox_runs[point], point)


def _check(item: Crashed, point: str) -> None:
    assert item.death is None, item.death
    tool_class = item.tool_class
    job, client = item.job, item.client
    assert job["status"] == "succeeded", job
    assert job["result"] == {"content": FINAL}
    # Finished before the crash it stays finished; otherwise another worker took over.
    assert job["attempts"] == 1 if point == "job.after_finish" else job["attempts"] >= 2
    steps = client.get(f"/v1/jobs/{item.job_id}/steps").json()["items"]
    llm = [s for s in steps if s["kind"] == "llm"]
    tools = [s for s in steps if s["kind"] == "tool"]
    case = CLASSES[tool_class]
    assert len(llm) == len(case.calls) + 1 and len(tools) == len(case.calls), steps
    assert all(s["executions"] == 1 for s in llm), llm
    messages = client.get(f"/v1/sessions/{item.session_id}/messages").json()["items"]
    roles = [m["role"] for m in messages]
    assert roles == ["user", *(["assistant", "tool"] * len(case.calls)), "assistant"], roles
    tool_messages = [m["content"] for m in messages if m["role"] == "tool"]
    CHECKS[tool_class](point, case.points[point], tools, tool_messages, _workspace(item.session_id))


def _check_read_only(
    point: str, nth: int, tools: list[dict[str, Any]], contents: list[str], ws: Path
) -> None:
    # Read-only calls are recorded once, when they finish: one cut off by the
    # crash left no trace and simply ran again, for real, on the new worker.
    assert [(s["name"], s["status"], s["executions"]) for s in tools] == [
        ("read_file", "succeeded", 1),
        ("grep", "succeeded", 1),
    ], tools
    assert "alpha" in contents[0] and "beta" in contents[1], contents


def _check_file_edit(
    point: str, nth: int, tools: list[dict[str, Any]], contents: list[str], ws: Path
) -> None:
    assert (ws / "counter.txt").read_text() == "count=2\n"
    assert [s["status"] for s in tools] == ["succeeded", "succeeded"], tools
    cut = tools[nth - 1]
    if point == "tool.after_effect":
        # Applied before the crash: confirmed by its recorded post-state, not re-applied.
        assert cut["executions"] == 1 and cut["result"]["data"] == {"recovered": True}, cut
        assert "confirmed after a worker restart" in contents[nth - 1]
    elif point in ("edit.after_hash_record", "tool.before_effect"):
        # Intent recorded, file untouched: the edit ran once, on the new worker.
        assert cut["executions"] == 2 and "recovered" not in cut["result"]["data"], cut
    else:
        assert all(s["executions"] == 1 for s in tools), tools
        assert all("recovered" not in s["result"]["data"] for s in tools), tools


def _check_sandbox(
    point: str, nth: int, tools: list[dict[str, Any]], contents: list[str], ws: Path
) -> None:
    runs = (ws / "runs.txt").read_text().count("ran") if (ws / "runs.txt").exists() else 0
    (step,) = tools
    if point in ("tool.before_effect", "tool.after_effect"):
        assert step["status"] == "interrupted" and step["error"]["code"] == "interrupted", step
        assert contents[0].startswith("ERROR [interrupted]"), contents
        # Sent before the crash it ran once; never sent, it never ran: not repeated either way.
        assert runs == (1 if point == "tool.after_effect" else 0)
    else:
        assert step["status"] == "succeeded" and step["executions"] == 1, step
        assert "exit code: 0" in contents[0]
        assert runs == 1


CHECKS = {"read_only": _check_read_only, "file_edit": _check_file_edit, "sandbox": _check_sandbox}
