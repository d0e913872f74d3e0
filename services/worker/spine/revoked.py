"""Ending a job whose user lost access: one clear terminal state and event.

The job ends ``cancelled`` (nobody's fault in the job itself, and nothing more
will run) with an error that starts ``access_revoked:``, after an
``access_revoked`` event on its stream, so its page, ``leaflab watch`` and any
reader of the stream see why it stopped.
"""

from __future__ import annotations

import uuid
from typing import Protocol

from services.common.contracts.statuses import JobStatus
from services.worker.spine.deps import RuntimeDeps
from services.worker.spine.events import JobEvents
from services.worker.spine.finish import finish_slice
from services.worker.spine.lease import Lease
from services.worker.spine.membership import access_now, revoked_reason
from services.worker.spine.outcome import Outcome

REVOKED_EVENT = "access_revoked"
REVOKED_PREFIX = "access_revoked: "


class Actor(Protocol):
    """Whom a job acts for, and where."""

    @property
    def user_id(self) -> uuid.UUID: ...

    @property
    def project_id(self) -> uuid.UUID | None: ...


def stop_if_revoked(
    deps: RuntimeDeps, lease: Lease, events: JobEvents, who: Actor, *, verdict: str | None = None
) -> Outcome | None:
    """End the job if its user may no longer act in its project; None when it may.

    ``verdict``: the answer a statement at this step boundary already read
    (``membership.access_verdict``: the lease, the last ledger write); None asks
    Postgres now, in a statement of its own."""
    if verdict is None:
        reason = access_now(deps.writer, user_id=who.user_id, project_id=who.project_id).revoked
    else:
        reason = revoked_reason(verdict)
    if reason is None:
        return None
    events.emit(REVOKED_EVENT, {"reason": reason})
    return finish_slice(
        deps, lease, events, status=JobStatus.CANCELLED, error=REVOKED_PREFIX + reason
    )
