"""A view that does not fit the window is refused before it is sent, as a failed llm step.

Sending it would only fail at the server (an HTTP 400, or an empty stream from
llama.cpp) after the budget was reserved and the breaker counted a failure; the
member instead reads what did not fit, in numbers, on the failed step and job.
"""

from __future__ import annotations

import uuid
from typing import Any

from services.common.contracts.steps import ContextOverflowError
from services.worker.spine.deps import RuntimeDeps
from services.worker.spine.lease import Lease
from services.worker.spine.recorder import record_failed_llm

OVERFLOW_CODE = "context_overflow"


def record_overflow(
    deps: RuntimeDeps,
    lease: Lease,
    *,
    session_id: uuid.UUID | None,
    key: str,
    round_no: int,
    request: dict[str, Any],
    message: str,
) -> None:
    """Record the llm step of round ``round_no`` as failed (no model call was made)."""
    error: ContextOverflowError = {"code": OVERFLOW_CODE, "message": message, "retryable": False}
    record_failed_llm(
        deps.writer,
        lease,
        session_id=session_id,
        key=key,
        round_no=round_no,
        request=request,
        error=error,
    )
