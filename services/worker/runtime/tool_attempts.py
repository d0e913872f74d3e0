"""One tool call's attempts: a time limit per attempt, retries with backoff and jitter.

Guarantees:
- Only a ``retryable`` :class:`ToolError` from a ``retry_safe`` tool is tried
  again, at most ``attempts`` times in all; every other failure is final at once.
- Waits grow exponentially (``base_s``, 2×, 4× …) with full jitter on top, so
  calls that failed together do not retry together.
- An attempt that outlives the tool's ``timeout_s`` fails with the structured
  error ``timeout`` (retryable when the tool is retry-safe). Its ``ctx.cancel``
  is set first and the attempt is given ``CANCEL_GRACE_S`` to stop, so a tool
  that kills its work on cancel (pdf_fetch's parse child) has none left running
  when the next attempt starts.
- A tool that raises anything but ToolError (a bug) becomes ``tool_crashed``,
  never a dead job. The final error records how many attempts were made.
"""

from __future__ import annotations

import contextvars
import dataclasses
import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from services.worker.tools.base import Tool, ToolContext, ToolError, ToolResult

log = logging.getLogger(__name__)
CANCEL_GRACE_S = 2.0


def backoff_delay(attempt: int, base_s: float, rng: random.Random | None = None) -> float:
    """The wait after failed attempt ``attempt`` (1-based): base·2^(n-1) plus jitter."""
    step = base_s * (2 ** (attempt - 1))
    return step + (rng or random).uniform(0, step)


def run_attempts(
    tool: Tool[Any],
    args: BaseModel,
    ctx: ToolContext,
    *,
    attempts: int,
    base_s: float,
    sleep: Callable[[float], None] = time.sleep,
) -> ToolResult:
    """Run ``tool`` under its time limit, retrying as the module docstring says."""
    allowed = max(1, attempts) if tool.retry_safe else 1
    for attempt in range(1, allowed + 1):
        try:
            return run_bounded(tool, args, ctx)
        except ToolError as err:
            if not err.retryable or attempt >= allowed:
                err.details.setdefault("attempts", attempt)
                raise
            delay = backoff_delay(attempt, base_s)
            log.warning(
                "tool %s failed (%s), attempt %d of %d; retrying in %.2f s",
                tool.name,
                err.code,
                attempt,
                allowed,
                delay,
            )
            sleep(delay)
        except Exception as exc:
            log.exception("tool %s crashed", tool.name)
            raise ToolError(
                "tool_crashed",
                f"{tool.name} failed unexpectedly: {exc}",
                category="internal",
                details={"attempts": attempt},
            ) from exc
    raise AssertionError("unreachable")


def run_bounded(tool: Tool[Any], args: BaseModel, ctx: ToolContext) -> ToolResult:
    """``tool.run`` within ``tool.timeout_s`` (unbounded when it declares none)."""
    limit = tool.timeout_s
    if limit is None:
        return tool.run(args, ctx)
    outcome: list[ToolResult | BaseException] = []
    finished = threading.Event()
    # The run keeps this call's trace context, so its spans stay in the job's trace.
    context = contextvars.copy_context()
    # Each attempt its own cancel flag: a retry must not start out cancelled.
    attempt_ctx = dataclasses.replace(ctx, cancel=threading.Event())

    def attempt() -> None:
        try:
            outcome.append(context.run(tool.run, args, attempt_ctx))
        except BaseException as exc:  # handed to the caller below
            outcome.append(exc)
        finally:
            finished.set()

    threading.Thread(target=attempt, name=f"tool-{tool.name}", daemon=True).start()
    if not finished.wait(limit):
        attempt_ctx.cancel.set()
        if not finished.wait(CANCEL_GRACE_S):
            log.warning("tool %s still running %.0f s after its timeout", tool.name, CANCEL_GRACE_S)
        raise ToolError(
            "timeout",
            f"{tool.name} did not finish within {limit:g} s",
            category="timeout",
            retryable=tool.retry_safe,
            details={"timeout_s": limit},
        )
    result = outcome[0]
    if isinstance(result, BaseException):
        raise result
    return result
