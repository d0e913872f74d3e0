"""A tool call that started but never finished is resumed according to its declared effect."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import ClassVar

import pytest
from celery import Celery
from pydantic import BaseModel
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker

from services.common.events import EventPublisher
from services.common.models import ChatSession, Job, JobStep
from services.common.redis_client import build_redis
from services.worker.llm.client import client_from_settings
from services.worker.llm.pricing import PriceBook
from services.worker.runtime.advance import advance
from services.worker.runtime.conversation import append_message
from services.worker.runtime.deps import RuntimeDeps
from services.worker.runtime.lease import LeaseKeeper
from services.worker.settings import WorkerSettings
from services.worker.tools.base import Tool, ToolContext, ToolEffect, ToolResult
from services.worker.tools.files import file_tools
from services.worker.tools.registry import ToolRegistry
from tests.conftest import Stack
from tests.fixtures.builders import make_user
from tests.fixtures.processes import Services


class RunArgs(BaseModel):
    code: str


class CountingSandboxTool(Tool):
    """Stands in for `python`: records every real execution."""

    name = "python"
    description = "run code"
    args_model = RunArgs
    effect = ToolEffect.SANDBOX
    runs: ClassVar[list[str]] = []

    def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        self.runs.append(ctx.tool_call_id)
        return ToolResult(content="ran")


@pytest.fixture
def deps(
    services: Services, stack: Stack, session_factory: sessionmaker[Session], engine: Engine
) -> RuntimeDeps:
    services.simulator({"replies": [{"content": "final answer"}]})
    settings = WorkerSettings(
        llm_base_url=services.env["LEAFLAB_LLM_BASE_URL"],
        database_url=stack.database_url,
        redis_url=stack.redis_url,
    )
    return RuntimeDeps(
        settings=settings,
        factory=session_factory,
        writer=engine.execution_options(isolation_level="AUTOCOMMIT"),
        model=client_from_settings(settings),
        prices=PriceBook.from_settings(settings),
        registry=ToolRegistry([*file_tools(), CountingSandboxTool()]),
        publisher=EventPublisher(build_redis(stack.redis_url)),
        celery=Celery("test", broker=stack.redis_url),
        keeper=LeaseKeeper(session_factory, ttl_s=5),
    )


def _interrupted_job(
    factory: sessionmaker[Session], *, tool: str, arguments: str, intent: dict | None
) -> tuple[uuid.UUID, uuid.UUID]:
    """A job whose ledger says: model asked for `tool`, the call started, then the worker died."""
    user = make_user(factory)
    with factory() as db, db.begin():
        session = ChatSession(user_id=user.id)
        db.add(session)
        db.flush()
        job = Job(
            user_id=user.id,
            session_id=session.id,
            kind="turn",
            status="running",
            input={"content": "go"},
            fence=1,
            attempts=1,
        )
        db.add(job)
        db.flush()
        append_message(db, session_id=session.id, job_id=job.id, role="user", content="go")
        call = {"id": "call_0_0", "name": tool, "arguments": arguments}
        append_message(
            db,
            session_id=session.id,
            job_id=job.id,
            role="assistant",
            content=None,
            tool_calls=[call],
        )
        db.add(
            JobStep(
                job_id=job.id,
                seq=1,
                step_key="llm:0",
                kind="llm",
                name="m",
                round=0,
                status="succeeded",
                fence=1,
                result={"content": None, "tool_calls": [call]},
            )
        )
        db.add(
            JobStep(
                job_id=job.id,
                seq=2,
                step_key="tool:0:call_0_0",
                kind="tool",
                name=tool,
                round=0,
                tool_call_id="call_0_0",
                status="running",
                fence=1,
                intent=intent,
            )
        )
        return job.id, session.id


def _tool_step(factory: sessionmaker[Session], job_id: uuid.UUID) -> JobStep:
    with factory() as db:
        step = db.scalar(
            select(JobStep).where(JobStep.job_id == job_id, JobStep.step_key == "tool:0:call_0_0")
        )
        assert step is not None
        return step


class TestResumeByEffect:
    def test_half_run_sandbox_exec_is_reported_interrupted_not_repeated(
        self, deps: RuntimeDeps, session_factory: sessionmaker[Session]
    ) -> None:
        CountingSandboxTool.runs.clear()
        job_id, _ = _interrupted_job(
            session_factory, tool="python", arguments='{"code": "print(1)"}', intent=None
        )
        advance(deps, job_id)
        step = _tool_step(session_factory, job_id)
        assert step.status == "interrupted"
        assert step.error is not None and step.error["code"] == "interrupted"
        assert CountingSandboxTool.runs == []
        with session_factory() as db:
            job = db.get(Job, job_id)
            assert job is not None and job.status == "succeeded"

    def test_applied_file_write_is_confirmed_not_reapplied(
        self, deps: RuntimeDeps, session_factory: sessionmaker[Session]
    ) -> None:
        tool = next(t for t in file_tools() if t.name == "write_file")
        job_id, session_id = _interrupted_job(
            session_factory,
            tool="write_file",
            arguments='{"path": "a.txt", "content": "v2"}',
            intent=None,
        )
        workspace = Path(os.environ["LEAFLAB_HOME"]) / "workspaces" / str(session_id)
        workspace.mkdir(parents=True, exist_ok=True)
        ctx = ToolContext(
            job_id=str(job_id),
            session_id=str(session_id),
            user_id="u",
            project_id=None,
            workspace=workspace,
            tool_call_id="call_0_0",
            step_key="tool:0:call_0_0",
            emit=lambda *_: None,
        )
        args = tool.parse({"path": "a.txt", "content": "v2"})
        intent = tool.intent(args, ctx)
        with session_factory() as db, db.begin():
            db.query(JobStep).filter(
                JobStep.job_id == job_id, JobStep.step_key == "tool:0:call_0_0"
            ).update({"intent": intent})
        tool.run(args, ctx)  # applied before the crash; the ledger never heard
        (workspace / "a.txt").chmod(0o444)  # a second write would now fail loudly

        advance(deps, job_id)
        step = _tool_step(session_factory, job_id)
        assert step.status == "succeeded"
        assert step.executions == 1
        assert step.result["data"]["recovered"] is True
        assert (workspace / "a.txt").read_text() == "v2"

    def test_read_only_tool_simply_runs_again(
        self, deps: RuntimeDeps, session_factory: sessionmaker[Session]
    ) -> None:
        job_id, _ = _interrupted_job(
            session_factory, tool="glob", arguments='{"pattern": "*"}', intent=None
        )
        advance(deps, job_id)
        step = _tool_step(session_factory, job_id)
        assert step.status == "succeeded"
        assert step.executions == 2
