"""The tool contract: validated arguments, a declared effect, structured failures.

Every tool the model can call is a :class:`Tool` subclass with a Pydantic
argument model. Arguments are validated before anything runs; invalid
arguments never execute. The declared :class:`ToolEffect` tells the runtime
what to do with a call that was started but not finished before a crash.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ValidationError
from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts.steps import ToolStepError
from services.worker.tools.ports import LibraryEndpoint, SandboxPort


class ToolEffect(StrEnum):
    READ_ONLY = "read_only"  # safe to run again after a crash
    IDEMPOTENT = "idempotent"  # full-state replacement (todo): running again is harmless
    WORKSPACE_EDIT = "workspace_edit"  # exactly-once via a recorded post-state (intent)
    SANDBOX = "sandbox"  # may have half-run: reported as interrupted, never repeated
    CHILD_JOB = "child_job"  # runs as a child job (runtime/child_jobs.py): spawned once
    # A call to a service Leaflab does not control (an MCP server's tool not marked
    # read-only or idempotent): may have half-run, reported as interrupted, never repeated
    EXTERNAL = "external"


class ToolError(Exception):
    """A structured tool failure the model sees (and the ledger stores)."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        category: str = "tool",
        retryable: bool = False,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.category = category
        self.retryable = retryable
        self.details = details or {}

    def to_dict(self) -> ToolStepError:
        return {
            "code": self.code,
            "category": self.category,
            "message": self.message,
            "retryable": self.retryable,
            "details": self.details,
        }


@dataclass
class ToolResult:
    """What the model reads (``content``) plus structured data for the ledger and UI."""

    content: str
    data: dict[str, Any] = field(default_factory=dict)


EventSink = Callable[[str, dict[str, Any]], None]


@dataclass
class ToolContext:
    """Everything a tool may touch while it runs for one job step."""

    job_id: str
    session_id: str | None
    user_id: str
    project_id: str | None
    workspace: Path
    tool_call_id: str
    step_key: str
    emit: EventSink
    # Ports to what lies beyond the workspace; a tool that needs an absent one
    # fails with a ToolError saying so.
    sandbox: SandboxPort | None = None
    library: LibraryEndpoint | None = None
    db: sessionmaker[Session] | None = None
    # The session whose workspace (and sandbox) this job uses when it is not its
    # own: a subagent works in its parent's. None: ``session_id``'s.
    workspace_session_id: str | None = None
    # Set when the attempt outlived the tool's ``timeout_s``: a tool that starts
    # work outside its thread (a child process) stops it (runtime/tool_attempts.py).
    cancel: threading.Event = field(default_factory=threading.Event)


ArgsT = TypeVar("ArgsT", bound=BaseModel)


class Tool(ABC, Generic[ArgsT]):
    """One tool, typed by its argument model: ``class ReadFileTool(Tool[ReadFileArgs])``.

    ``parse`` returns that model, so ``intent`` and ``run`` receive it typed.
    Code that holds tools of many kinds (the registry, the runtime) holds
    ``Tool[Any]`` and passes each tool's own ``parse`` result to its ``run``.
    """

    name: ClassVar[str]
    description: ClassVar[str]
    # Not a ClassVar (a ClassVar cannot hold a type variable); set on the class all the same.
    args_model: type[ArgsT]
    effect: ClassVar[ToolEffect] = ToolEffect.READ_ONLY
    # Retryable failures of a retry-safe tool are tried again with backoff and
    # jitter (WorkerSettings.tool_retry_attempts); others fail on the first try.
    retry_safe: ClassVar[bool] = False
    # Seconds one attempt may take; an overrun fails with the structured error
    # ``timeout`` (retryable when the tool is retry-safe). The overrunning run is
    # told to stop (``ctx.cancel``) but not forced to, so only tools whose late
    # finish is harmless (reads, network look-ups) set one, and a tool that starts
    # a process kills it on ``ctx.cancel``; None means no limit beyond the tool's own.
    timeout_s: ClassVar[float | None] = None
    # Every call waits for a human's approval, whatever the approval mode (an MCP
    # server an admin registered with ``approval: true``).
    approval_required: ClassVar[bool] = False

    def parse(self, raw: dict[str, Any]) -> ArgsT:
        """Validate raw model-supplied arguments; raise ToolError on any problem."""
        try:
            return self.args_model.model_validate(raw)
        except ValidationError as exc:
            problems = [
                {"loc": ".".join(str(p) for p in err["loc"]), "msg": err["msg"]}
                for err in exc.errors()
            ]
            raise ToolError(
                "invalid_arguments",
                f"invalid arguments for {self.name}: "
                + "; ".join(f"{p['loc'] or '(root)'}: {p['msg']}" for p in problems),
                category="validation",
                details={"errors": problems},
            ) from None

    def intent(self, args: ArgsT, ctx: ToolContext) -> dict[str, Any] | None:
        """For WORKSPACE_EDIT tools: the post-state to record before applying."""
        return None

    def is_applied(self, intent: dict[str, Any], ctx: ToolContext) -> bool:
        """For WORKSPACE_EDIT tools: whether the workspace already holds the post-state."""
        return False

    @abstractmethod
    def run(self, args: ArgsT, ctx: ToolContext) -> ToolResult:
        """Execute with validated arguments; raise ToolError for expected failures."""

    def openai_schema(self) -> dict[str, Any]:
        schema = self.args_model.model_json_schema()
        schema.pop("title", None)
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": schema},
        }
