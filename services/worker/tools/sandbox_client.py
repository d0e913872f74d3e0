"""The sandbox port over Celery: ``sandbox.exec`` on the configured sandbox queue."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from celery import Celery
from celery.exceptions import TimeoutError as CeleryTimeout
from pydantic import ValidationError

from services.common.contracts.sandbox import SandboxResult
from services.common.contracts.tasks import send_sandbox_exec
from services.worker.tools.base import ToolError
from services.worker.tools.ports import SandboxRequest


class CelerySandbox:
    """Sends each execution by task name and waits for its result."""

    def __init__(self, celery: Celery, *, queue: str) -> None:
        self._celery = celery
        self._queue = queue

    def execute(self, request: SandboxRequest, *, wait_s: float) -> SandboxResult:
        pending = send_sandbox_exec(self._celery, asdict(request), queue=self._queue)
        try:
            answer: Any = pending.get(timeout=wait_s, disable_sync_subtasks=False)
        except CeleryTimeout:
            pending.revoke()  # a late start would surprise the model; never run it then
            raise ToolError(
                "sandbox_timeout",
                f"no sandbox answered within {wait_s:g}s (sandbox workers busy or down)",
                category="sandbox",
                retryable=False,
            ) from None
        except Exception as exc:  # a crashed task surfaces as its exception type
            raise ToolError(
                "sandbox_failed", f"sandbox execution failed: {exc!r}"[:2000], category="sandbox"
            ) from exc
        try:
            return SandboxResult.model_validate(answer)
        except ValidationError as exc:  # a sandbox that speaks another contract
            raise ToolError(
                "sandbox_failed",
                f"the sandbox's answer is malformed: {exc}"[:2000],
                category="sandbox",
            ) from None
