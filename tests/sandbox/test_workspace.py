"""Session workspaces are never world-writable, and the sandbox user still writes them."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from celery import Celery
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import Artifact
from services.sandbox.settings import SandboxSettings
from services.sandbox.workspace import (
    ACL_ACCESS_XATTR,
    ACL_DEFAULT_XATTR,
    acl_users,
    prepare_workspace,
)
from services.worker.tools.code import PythonArgs, PythonTool
from services.worker.tools.files.editing import WriteFileArgs, WriteFileTool
from tests.sandbox.conftest import WorkerProc, make_job, tool_ctx

READ_AND_WRITE = (
    "import os\n"
    "os.makedirs('plots', exist_ok=True)\n"
    "open('plots/out.txt', 'w').write(open('notes.md').read() + ' and the sandbox')\n"
    "print(os.getuid())\n"
)


def closed_to_others(path: Path) -> bool:
    return path.stat().st_mode & 0o007 == 0


def world_writable(path: Path) -> bool:
    return path.stat().st_mode & 0o002 != 0


class TestPrepareWorkspace:
    def test_private_directory_with_the_sandbox_uid_in_its_acl(self, tmp_path: Path) -> None:
        ws = tmp_path / "ws"
        prepare_workspace(ws, sandbox_uid=10001, sandbox_gid=10001)
        assert closed_to_others(ws), oct(ws.stat().st_mode)
        for xattr in (ACL_ACCESS_XATTR, ACL_DEFAULT_XATTR):
            users = acl_users(os.getxattr(ws, xattr))
            assert users[10001] == 0o7 and users[os.geteuid()] == 0o7
        # Created by anyone, with any umask: inherits the default ACL, not world bits.
        old = os.umask(0)
        try:
            (ws / "made-with-umask-000.txt").write_text("x")
        finally:
            os.umask(old)
        assert closed_to_others(ws / "made-with-umask-000.txt")


class TestSandboxWritesPrivateWorkspace:
    def test_python_tool_writes_and_artifacts_come_back(
        self,
        sandbox_worker: WorkerProc,
        celery_client: Celery,
        sandbox_settings: SandboxSettings,
        session_factory: sessionmaker[Session],
    ) -> None:
        refs = make_job(session_factory)
        ctx = tool_ctx(refs, celery_client, sandbox_settings)
        # The agent's file tool creates the workspace first, as in a real session ...
        WriteFileTool().run(WriteFileArgs(path="notes.md", content="by the agent"), ctx)
        assert closed_to_others(ctx.workspace), oct(ctx.workspace.stat().st_mode)
        # ... then sandboxed code (another uid) reads that file and writes new ones.
        result = PythonTool().run(PythonArgs(code=READ_AND_WRITE, timeout=60), ctx)

        assert result.data["exit_code"] == 0, result.content
        assert result.data["stdout"].strip() == str(sandbox_settings.sandbox_uid_gid[0])
        assert [a["name"] for a in result.data["artifacts"]] == ["plots/out.txt"]
        with session_factory() as s:
            rows = {
                a.name: a.content
                for a in s.scalars(
                    select(Artifact).where(Artifact.job_id == uuid.UUID(refs.job_id))
                )
            }
        assert rows == {"plots/out.txt": b"by the agent and the sandbox"}
        ws = ctx.workspace
        # The session's directories are closed to other users; no file in them is
        # world-writable (the sandbox's own files get no bits for others at all).
        assert closed_to_others(ws) and closed_to_others(ws / "plots")
        assert closed_to_others(ws / "plots" / "out.txt")
        assert not any(world_writable(p) for p in (ws / "notes.md", ws / "plots" / "out.txt"))
