"""The python/bash tools through a real Celery sandbox worker and Docker."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
import redis
from celery import Celery
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts.keys import job_stream
from services.common.events import decode_entry
from services.common.models import Artifact
from services.sandbox.settings import SandboxSettings
from services.worker.tools.base import ToolError
from services.worker.tools.code import BashArgs, BashTool, PythonArgs, PythonTool, code_tools
from tests.conftest import Stack
from tests.sandbox.conftest import (
    WorkerProc,
    make_job,
    start_worker,
    stop_worker,
    tool_ctx,
    wait_for_spare,
)

PID_SIM = r"""
import json
import control
import numpy as np
import matplotlib.pyplot as plt

plant = control.tf([1.0], [1.0, 3.0, 2.0])
kp, ki, kd = 10.0, 5.0, 1.0
pid = control.tf([kd, kp, ki], [1.0, 0.0])
closed = control.feedback(pid * plant, 1)
t = np.linspace(0, 8, 800)
t, y = control.step_response(closed, t)
info = control.step_info(closed)
plt.plot(t, y)
plt.xlabel("t [s]"); plt.ylabel("y"); plt.title("PID step response")
plt.savefig("step_response.png", dpi=80)
np.savetxt("response.csv", np.c_[t, y], delimiter=",")
print(json.dumps({"final": float(y[-1]), "overshoot": info["Overshoot"],
                  "settling": info["SettlingTime"]}))
"""


class TestAgentSimulation:
    def test_pid_step_response_returns_numbers_and_png_artifact(
        self,
        stack: Stack,
        sandbox_worker: WorkerProc,
        celery_client: Celery,
        sandbox_settings: SandboxSettings,
        session_factory: sessionmaker[Session],
    ) -> None:
        refs = make_job(session_factory)
        ctx = tool_ctx(refs, celery_client, sandbox_settings)
        result = PythonTool().run(PythonArgs(code=PID_SIM, timeout=60), ctx)

        assert result.data["exit_code"] == 0, result.content
        figures = json.loads(result.data["stdout"].strip().splitlines()[-1])
        assert figures["final"] == pytest.approx(1.0, abs=0.02)  # integral action: no offset
        assert 0 < figures["overshoot"] < 100
        assert "step_response.png" in result.content
        with session_factory() as s:
            rows = {
                a.name: a
                for a in s.scalars(
                    select(Artifact).where(Artifact.job_id == uuid.UUID(refs.job_id))
                )
            }
        assert rows["step_response.png"].mime == "image/png"
        assert rows["step_response.png"].content.startswith(b"\x89PNG\r\n\x1a\n")
        assert rows["response.csv"].size > 1000
        # The same files are in the session workspace the file tools see.
        assert (ctx.workspace / "step_response.png").exists()

        types = [e["type"] for e in result.data["events"]]
        assert types[0] == "sandbox_start" and "sandbox_end" in types
        raw = redis.Redis.from_url(stack.redis_url).xrange(job_stream(refs.job_id))
        streamed = [decode_entry(i, f)["type"] for i, f in raw]
        assert "sandbox_start" in streamed and "sandbox_end" in streamed


class TestToolResults:
    def test_nonzero_exit_is_a_result_not_an_error(
        self,
        sandbox_worker: WorkerProc,
        celery_client: Celery,
        sandbox_settings: SandboxSettings,
        session_factory: sessionmaker[Session],
    ) -> None:
        refs = make_job(session_factory)
        result = BashTool().run(
            BashArgs(command="echo out; echo err >&2; exit 3"),
            tool_ctx(refs, celery_client, sandbox_settings),
        )
        assert result.data["exit_code"] == 3
        assert "exit code: 3" in result.content
        assert "out" in result.data["stdout"] and "err" in result.data["stderr"]

    def test_session_workspace_persists_between_execs_and_is_warm(
        self,
        stack: Stack,
        sandbox_image: str,
        sandbox_tables: None,
        celery_client: Celery,
        sandbox_settings: SandboxSettings,
        session_factory: sessionmaker[Session],
        tmp_path: Path,
    ) -> None:
        # A worker of its own: the shared one's pool may be full of idle session
        # containers from earlier tests (sandbox_pool_max), leaving no room for a spare.
        queue = f"sandbox-warm-{uuid.uuid4().hex[:6]}"
        worker = start_worker(tmp_path, stack.redis_url, queue)
        try:
            wait_for_spare(stack.redis_url, worker)
            refs = make_job(session_factory)
            tool = PythonTool()
            first = tool.run(
                PythonArgs(code="open('n.txt','w').write('41')"),
                tool_ctx(refs, celery_client, sandbox_settings, queue=queue),
            )
            second = tool.run(
                PythonArgs(code="print(int(open('n.txt').read()) + 1)"),
                tool_ctx(refs, celery_client, sandbox_settings, queue=queue),
            )
        finally:
            stop_worker(worker)
        assert first.data["warm"] is True  # a pre-started spare adopted the workspace
        assert second.data["warm"] is True
        assert second.data["stdout"].strip() == "42"
        # Warm execs go through the in-container runner, not `docker exec`.
        ends = [e["data"] for e in second.data["events"] if e["type"] == "sandbox_end"]
        assert [e["via"] for e in ends] == ["runner"]

    def test_redelivered_exec_returns_stored_result_without_rerunning(
        self,
        sandbox_worker: WorkerProc,
        celery_client: Celery,
        sandbox_settings: SandboxSettings,
        session_factory: sessionmaker[Session],
    ) -> None:
        refs = make_job(session_factory)
        code = "echo run >> runs.log; wc -l < runs.log"
        ctx = tool_ctx(refs, celery_client, sandbox_settings, call="call_same")
        first = BashTool().run(BashArgs(command=code), ctx)
        again = BashTool().run(BashArgs(command=code), ctx)
        assert again.data["replayed"] is True
        assert again.data["stdout"] == first.data["stdout"]
        assert (ctx.workspace / "runs.log").read_text().count("run") == 1

    def test_dangerous_command_refused_before_running(
        self,
        sandbox_worker: WorkerProc,
        celery_client: Celery,
        sandbox_settings: SandboxSettings,
        session_factory: sessionmaker[Session],
    ) -> None:
        refs = make_job(session_factory)
        with pytest.raises(ToolError) as err:
            BashTool().run(
                BashArgs(command="rm -rf / --no-preserve-root"),
                tool_ctx(refs, celery_client, sandbox_settings),
            )
        assert err.value.code == "dangerous_command"

    def test_tools_are_declared_sandbox_effect(self) -> None:
        tools = {t.name: t for t in code_tools()}
        assert set(tools) == {"python", "bash"}
        assert all(t.effect == "sandbox" for t in tools.values())
        with pytest.raises(ToolError) as err:
            tools["python"].parse({"code": "print(1)", "timeout": 10_000})
        assert err.value.code == "invalid_arguments"
