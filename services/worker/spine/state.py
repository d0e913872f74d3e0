"""What a turn runner holds in memory while it owns the lease.

While the lease is held this runner is the job's only writer (every write is
fenced), so the ledger and history it loaded at the start of the slice stay
true as long as it appends what it writes. That saves re-reading both before
every step; a new slice, on any worker, starts from Postgres again.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from services.common.contracts.statuses import StepStatus
from services.common.models import Message
from services.worker.spine.ledger import StepView
from services.worker.spine.recorder import Recorded


@dataclass
class TurnState:
    steps: dict[str, StepView]
    history: list[Message]
    cancel_requested: bool = False
    # Whether the job's user may still act in its project, as the latest statement
    # at a step boundary read it (the lease, then each ledger write); taken by the
    # check before the next step, so a check never reuses an older answer.
    access: str | None = None

    def saw(self, done: Recorded) -> None:
        """Note what a ledger write read back: a cancel request, the access verdict."""
        self.cancel_requested |= done.cancel_requested
        self.access = done.access

    def take_access(self) -> str | None:
        """The access verdict read since the last check, once (None: none since)."""
        verdict, self.access = self.access, None
        return verdict

    def started(self, key: str, **fields: Any) -> None:
        previous = self.steps.get(key)
        executions = previous.executions + 1 if previous else 1
        self.steps[key] = StepView(
            key=key,
            kind=fields["kind"],
            name=fields["name"],
            round=fields["round_no"],
            tool_call_id=fields.get("tool_call_id"),
            # Checked here: the fields arrive untyped, a misspelt status must not pass.
            status=StepStatus(fields.get("status", StepStatus.RUNNING)),
            arguments=fields.get("arguments"),
            intent=fields.get("intent"),
            result=fields.get("result"),
            error=fields.get("error"),
            executions=executions,
        )

    def finished(self, key: str, *, status: StepStatus, result: Any, error: Any) -> None:
        self.steps[key] = replace(self.steps[key], status=status, result=result, error=error)
