"""Workspace disk has absolute caps: per workspace and per user, checked before an exec,
polled during it and measured after it; an exec stopped for disk leaves nothing past the
cap; deleting a session removes its workspace, and the sweep removes orphans.

A private sandbox worker (its own queue) runs with small caps: 64 MB per workspace,
90 MB per user, and the per-exec growth quota out of the way (512 MB), so what stops
a run here is the absolute cap. The file-size ulimit of the suite is 16 MB, so each
exec writes its 30 MB as two 15 MB files.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import pytest
from celery import Celery
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import ChatSession, Job
from services.common.workspace_usage import MB, directory_bytes
from services.sandbox import sweep
from services.sandbox.settings import SandboxSettings
from services.worker.tools.base import ToolError, ToolResult
from services.worker.tools.code import PythonArgs, PythonTool
from tests.conftest import Stack
from tests.fixtures.builders import TestUser, client_for, make_user
from tests.fixtures.processes import Services
from tests.sandbox.conftest import JobRefs, WorkerProc, start_worker, stop_worker, tool_ctx

QUEUE = f"sandbox-disk-{uuid.uuid4().hex[:8]}"
WORKSPACE_CAP_MB = 64
USER_CAP_MB = 90
CAPS_ENV = {
    "LEAFLAB_SANDBOX_WORKSPACE_MAX_MB": str(WORKSPACE_CAP_MB),
    "LEAFLAB_SANDBOX_USER_DISK_MAX_MB": str(USER_CAP_MB),
    "LEAFLAB_SANDBOX_WORKSPACE_QUOTA_MB": "512",
    # The janitor's sweep stays out of these tests (one round at start): a
    # removal seen here is the delete's own request. The sweep is tested directly.
    "LEAFLAB_SANDBOX_WORKSPACE_SWEEP_S": "3600",
    "LEAFLAB_SANDBOX_WORKSPACE_ORPHAN_GRACE_S": "3600",
}
WRITE_30MB = (
    "import sys\n"
    "for part in ('a', 'b'):\n"
    "    with open(f'{TAG}-{part}.bin', 'wb') as f:\n"
    "        f.write(b'0' * (15 << 20))\n"
    "print('wrote', TAG)\n"
)


@pytest.fixture(scope="module")
def disk_worker(
    stack: Stack,
    sandbox_image: str,
    sandbox_tables: None,
    sandbox_settings: SandboxSettings,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[WorkerProc]:
    saved = {k: os.environ.get(k) for k in CAPS_ENV}
    os.environ.update(CAPS_ENV)
    try:
        worker = start_worker(tmp_path_factory.mktemp("disk-worker"), stack.redis_url, QUEUE)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    yield worker
    stop_worker(worker)


def new_session(factory: sessionmaker[Session], user_id: uuid.UUID) -> JobRefs:
    """A real session row (the per-user total goes by sessions) and a turn job in it."""
    with factory() as s, s.begin():
        session = ChatSession(user_id=user_id, title="disk")
        s.add(session)
        s.flush()
        job = Job(user_id=user_id, session_id=session.id, kind="turn", input={})
        s.add(job)
        s.flush()
        return JobRefs(
            job_id=str(job.id), session_id=str(session.id), user_id=str(user_id), project_id=""
        )


class Runner:
    def __init__(self, celery: Celery, settings: SandboxSettings) -> None:
        self.celery, self.settings = celery, settings

    def run(self, refs: JobRefs, code: str, timeout: float = 30) -> ToolResult:
        ctx = tool_ctx(refs, self.celery, self.settings, queue=QUEUE)
        return PythonTool().run(PythonArgs(code=code, timeout=timeout), ctx)

    def write_30mb(self, refs: JobRefs, tag: str) -> ToolResult:
        return self.run(refs, f"TAG = {tag!r}\n" + WRITE_30MB)

    def workspace(self, refs: JobRefs) -> Path:
        return self.settings.workspaces_dir / refs.session_id


@pytest.fixture
def runner(
    disk_worker: WorkerProc, celery_client: Celery, sandbox_settings: SandboxSettings
) -> Iterator[Runner]:
    yield Runner(celery_client, sandbox_settings)
    assert disk_worker.alive(), disk_worker.log.read_text()[-3000:]


@pytest.fixture
def user(session_factory: sessionmaker[Session]) -> TestUser:
    return make_user(session_factory)


class TestWorkspaceCap:
    def test_the_third_30mb_exec_is_stopped_and_the_workspace_stays_under_its_cap(
        self, runner: Runner, user: TestUser, session_factory: sessionmaker[Session]
    ) -> None:
        refs = new_session(session_factory, user.id)
        ws = runner.workspace(refs)
        assert runner.write_30mb(refs, "one").data["stdout"] == "wrote one\n"
        assert runner.write_30mb(refs, "two").data["stdout"] == "wrote two\n"
        assert directory_bytes(ws) == 60 * MB

        # 60 MB < 64: the third starts, and is stopped for disk (by the poll or, when
        # it finished between two polls, by the measure after it).
        with pytest.raises(ToolError) as stopped:
            runner.write_30mb(refs, "three")
        assert stopped.value.code == "sandbox_disk_quota"
        assert "removed or cut back" in stopped.value.message
        assert f"of its {WORKSPACE_CAP_MB}.0 MB cap" in stopped.value.message
        # What it wrote past the cap is gone; the first two runs' files are intact.
        assert directory_bytes(ws) <= WORKSPACE_CAP_MB * MB
        assert sorted(p.name for p in ws.glob("*.bin")) == [
            "one-a.bin",
            "one-b.bin",
            "two-a.bin",
            "two-b.bin",
        ]

        # Filled to the cap from outside the sandbox (the file tools write there too):
        # the next exec is refused before it starts, with the numbers.
        (ws / "filler.bin").write_bytes(b"0" * (4 * MB))
        with pytest.raises(ToolError) as refused:
            runner.run(refs, "open('ran.txt', 'w').write('x')")
        assert refused.value.code == "workspace_full"
        assert "64.0 MB used of its 64.0 MB cap" in refused.value.message
        assert "delete files" in refused.value.message
        assert not (ws / "ran.txt").exists()

    def test_a_slow_filler_is_killed_mid_run_at_the_absolute_cap(
        self, runner: Runner, user: TestUser, session_factory: sessionmaker[Session]
    ) -> None:
        refs = new_session(session_factory, user.id)
        ws = runner.workspace(refs)
        ws.mkdir(parents=True, exist_ok=True)
        (ws / "earlier.bin").write_bytes(b"1" * (40 * MB))
        # 4 MB every 0.1 s up to 200 MB: far past the 24 MB left, well within the
        # growth quota (512 MB) and the timeout; only the absolute poll stops it early.
        code = (
            "import time\n"
            "for i in range(50):\n"
            "    open(f'fill{i}.bin', 'wb').write(b'0' * (4 << 20))\n"
            "    print('total', (i + 1) * 4, flush=True)\n"
            "    time.sleep(0.1)\n"
            "print('done', flush=True)\n"
        )
        with pytest.raises(ToolError) as stopped:
            runner.run(refs, code, timeout=60)
        assert stopped.value.code == "sandbox_disk_quota"
        assert "done" not in stopped.value.message
        written = [
            int(line.split()[1])
            for line in stopped.value.message.splitlines()
            if line.startswith("total ")
        ]
        assert written and max(written) < 120, written  # stopped mid-run, not at the end
        assert directory_bytes(ws) <= WORKSPACE_CAP_MB * MB
        assert (ws / "earlier.bin").stat().st_size == 40 * MB
        assert not list(ws.glob("fill*.bin"))


class TestUserTotal:
    def test_the_users_total_across_two_sessions_refuses_the_next_exec(
        self, runner: Runner, user: TestUser, session_factory: sessionmaker[Session]
    ) -> None:
        first = new_session(session_factory, user.id)
        second = new_session(session_factory, user.id)
        runner.write_30mb(first, "a1")
        runner.write_30mb(first, "a2")
        # 60 MB in the first session: the second may still take 30 MB (its own cap is 64).
        assert runner.write_30mb(second, "b1").data["stdout"] == "wrote b1\n"
        with pytest.raises(ToolError) as refused:
            runner.run(second, "open('ran.txt', 'w').write('x')")
        assert refused.value.code == "user_disk_full"
        assert f"90.0 MB used in all of your sessions, of the {USER_CAP_MB}.0 MB" in (
            refused.value.message
        )
        assert not (runner.workspace(second) / "ran.txt").exists()
        total = directory_bytes(runner.workspace(first)) + directory_bytes(runner.workspace(second))
        assert total <= USER_CAP_MB * MB

    def test_of_two_execs_at_once_the_one_ending_last_past_the_users_cap_is_taken_back(
        self, runner: Runner, user: TestUser, session_factory: sessionmaker[Session]
    ) -> None:
        first = new_session(session_factory, user.id)
        second = new_session(session_factory, user.id)
        runner.write_30mb(first, "a1")
        # The second starts with 60 MB of room (90 - 30), sleeps, then writes 45 MB;
        # meanwhile the first session grows to 60 MB, leaving only 30 MB for it.
        late = (
            "import time\ntime.sleep(6)\n"
            "for part in 'abc':\n    open(f'late-{part}.bin', 'wb').write(b'0' * (15 << 20))\n"
            "print('late done')\n"
        )
        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(runner.run, second, late)
            time.sleep(1.5)
            assert runner.write_30mb(first, "a2").data["stdout"] == "wrote a2\n"
            with pytest.raises(ToolError) as stopped:
                pending.result(timeout=90)
        assert stopped.value.code == "sandbox_disk_quota"
        assert "late done" in stopped.value.message  # it ran to the end: the after-check
        assert not list(runner.workspace(second).glob("late-*.bin"))
        total = directory_bytes(runner.workspace(first)) + directory_bytes(runner.workspace(second))
        assert total <= USER_CAP_MB * MB


@pytest.fixture(scope="module")
def api_url(
    stack: Stack, disk_worker: WorkerProc, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    services = Services(stack, tmp_path_factory.mktemp("disk-api"))
    services.env.update({**CAPS_ENV, "LEAFLAB_SANDBOX_QUEUE": QUEUE})
    try:
        yield services.api()
    finally:
        services.stop()


class TestDeletion:
    def test_deleting_a_session_removes_its_workspace_and_usage_is_reported(
        self, runner: Runner, api_url: str, session_factory: sessionmaker[Session]
    ) -> None:
        owner = make_user(session_factory)
        api = client_for(api_url, owner)
        sid = api.post("/v1/sessions", json={"title": "to delete"}).json()["id"]
        with session_factory() as s:
            job = Job(user_id=owner.id, session_id=uuid.UUID(sid), kind="turn", input={})
            s.add(job)
            s.commit()
            refs = JobRefs(str(job.id), sid, str(owner.id), "")
        runner.run(refs, "open('notes.txt', 'wb').write(b'x' * 5000)")
        ws = runner.workspace(refs)
        assert ws.is_dir()

        usage = api.get(f"/v1/sessions/{sid}/workspace").json()
        assert usage["bytes"] == 5000
        assert usage["cap_bytes"] == WORKSPACE_CAP_MB * MB
        assert usage["user_bytes"] == 5000
        assert usage["user_cap_bytes"] == USER_CAP_MB * MB

        assert api.delete(f"/v1/sessions/{sid}").status_code == 204
        deadline = time.monotonic() + 20
        while ws.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not ws.exists(), "the deleted session's workspace is still on disk"
        assert api.get(f"/v1/sessions/{sid}/workspace").status_code == 404

    def test_a_drop_request_for_a_live_session_removes_nothing(
        self,
        runner: Runner,
        user: TestUser,
        session_factory: sessionmaker[Session],
        celery_client: Celery,
    ) -> None:
        refs = new_session(session_factory, user.id)
        runner.run(refs, "open('keep.txt', 'w').write('keep')")
        pending = celery_client.send_task(
            "sandbox.drop_workspace", args=[refs.session_id], queue=QUEUE
        )
        assert pending.get(timeout=30) is False
        assert (runner.workspace(refs) / "keep.txt").read_text() == "keep"


class TestSweep:
    def test_the_sweep_removes_workspaces_of_deleted_and_unknown_sessions_only(
        self, tmp_path: Path, user: TestUser, session_factory: sessionmaker[Session]
    ) -> None:
        live = new_session(session_factory, user.id)
        deleted = new_session(session_factory, user.id)
        with session_factory() as s, s.begin():
            row = s.get(ChatSession, uuid.UUID(deleted.session_id))
            assert row is not None
            row.deleted_at = datetime.now(UTC)  # then a crash: the rm never happened
        sessionless_job = new_session(session_factory, user.id).job_id
        old_orphan, young_orphan = str(uuid.uuid4()), str(uuid.uuid4())
        names = [
            live.session_id,
            deleted.session_id,
            sessionless_job,
            old_orphan,
            young_orphan,
            uuid.uuid4().hex,  # not a session's spelling (scratch and test workspaces)
            ".sandbox-slots",
        ]
        for name in names:
            (tmp_path / name / "sub").mkdir(parents=True)
            (tmp_path / name / "sub" / "f.txt").write_text("x")
        hour_ago = time.time() - 3600
        for name in names:
            os.utime(tmp_path / name, (hour_ago, hour_ago))
        now = time.time()
        os.utime(tmp_path / young_orphan, (now, now))
        forgotten: list[str] = []

        removed = sweep.sweep(session_factory, tmp_path, grace_s=600, forget=forgotten.append)

        assert sorted(removed) == sorted([deleted.session_id, old_orphan])
        assert sorted(forgotten) == sorted(removed)  # their warm containers dropped too
        left = sorted(p.name for p in tmp_path.iterdir())
        assert left == sorted(set(names) - {deleted.session_id, old_orphan})
