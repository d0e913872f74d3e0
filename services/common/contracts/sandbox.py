"""The answer of one ``sandbox.exec``: what the sandbox worker returns to the agent worker.

One model for every shape the sandbox sends: a finished run (streams, exit
code, artifacts, lifecycle events, disk report), a kill (``killed_reason``), a
refusal or error (``error``), an exec interrupted by a dead sandbox worker
(``exec_key``), a replay of a stored result (``replayed``). Only ``status`` is
always there; every other field is None when that answer did not carry it.

``extra="allow"`` (here and in the nested models): a newer sandbox's fields
survive the trip, and :meth:`SandboxResult.as_sent` gives back exactly the
JSON that came in (no field added, none dropped), which is what the ledger
stores. ``status`` is a plain string, not an enum, for the same reason: an
unknown status is the caller's to handle (as a failure), not a parse error.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict


class SandboxOutcome(StrEnum):
    """The words of :attr:`SandboxResult.status` (not a ``sandbox_executions`` row's
    status: that is ``statuses.ExecutionStatus``)."""

    OK = "ok"  # ran to its end (any exit code)
    TIMEOUT = "timeout"  # killed at its time limit
    KILLED = "killed"  # killed for another limit: see ``killed_reason``
    REFUSED = "refused"  # never run: policy or a full disk (``error``)
    ERROR = "error"  # never run: invalid request, backend unavailable (``error``)
    # Its sandbox worker died mid-run; never run again (it may have partly run).
    INTERRUPTED = "interrupted"


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class SandboxError(_Open):
    code: str | None = None
    message: str | None = None


class SandboxArtifact(_Open):
    """A new or changed workspace file, stored as a job artifact."""

    name: str
    size: int
    mime: str
    sha256: str | None = None


class SkippedArtifact(_Open):
    """A changed file that was not stored, and why (too big, too many)."""

    name: str
    reason: str
    size: int | None = None


class DiskReport(_Open):
    """The workspace's and its user's disk after the run, and what was taken back."""

    workspace_bytes: int = 0
    workspace_cap_bytes: int = 0
    user_bytes: int = 0
    user_cap_bytes: int = 0
    removed_files: int = 0
    removed_bytes: int = 0


class SandboxResult(_Open):
    status: str  # a SandboxOutcome word (a newer sandbox may send another)
    error: SandboxError | None = None
    exit_code: int | None = None
    stdout: str | None = None
    stderr: str | None = None
    stdout_bytes: int | None = None
    stderr_bytes: int | None = None
    truncated: bool | None = None
    timed_out: bool | None = None
    killed_reason: str | None = None  # timeout | output_limit | workspace_quota
    oom_killed: bool | None = None
    duration_ms: float | None = None
    warm: bool | None = None
    sandbox_id: str | None = None
    backend: str | None = None
    artifacts: list[SandboxArtifact] | None = None
    artifacts_skipped: list[SkippedArtifact] | None = None
    # Lifecycle events as the sandbox published them: {type, data, at}.
    events: list[dict[str, Any]] | None = None
    disk: DiskReport | None = None
    replayed: bool | None = None
    exec_key: str | None = None  # an interrupted exec's

    def as_sent(self) -> dict[str, Any]:
        """The result as JSON, with exactly the fields the sandbox sent (what is stored)."""
        return self.model_dump(mode="json", exclude_unset=True)
