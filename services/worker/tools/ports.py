"""What tools may reach beyond the workspace: typed ports, built once per worker.

Tools depend on these small interfaces, not on Celery, settings objects or
HTTP clients, so a test (or a future transport) can hand in another
implementation and a reader sees at the call site what a tool can touch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from services.common.contracts.sandbox import SandboxResult


@dataclass(frozen=True)
class SandboxRequest:
    """One execution of model-written code, keyed by job and tool call so a
    redelivered request never runs twice."""

    job_id: str
    tool_call_id: str
    session_id: str | None
    project_id: str | None
    language: str
    code: str
    timeout_s: float


class SandboxPort(Protocol):
    def execute(self, request: SandboxRequest, *, wait_s: float) -> SandboxResult:
        """The sandbox worker's result (``status``, streams, artifacts …).

        Raises ToolError when no sandbox answers within ``wait_s`` or the
        execution itself crashed.
        """
        ...


@dataclass(frozen=True)
class LibraryEndpoint:
    """Where the paper library answers, and the service token it accepts."""

    url: str
    internal_token: str


class IngestQueue(Protocol):
    def queue_ingest(self, document_id: str) -> None:
        """Ask the library to ingest a registered document (after its row is committed)."""
        ...
