"""Server-Sent Events for a job, read from its Redis stream, resumable by Last-Event-ID.

A stream survives any silence: reads block for less than the Redis socket
timeout, and a ``: ping`` comment goes out at least every ``sse_ping_s`` so
proxies keep the connection open while a slow model thinks. If Redis drops
the connection (restart, failover) the stream keeps pinging and reconnects.
Events live only in Redis (the ledger in Postgres is the record): when the
event a client resumes from is no longer there — Redis restarted empty, or
the stream was trimmed — the client gets an ``events_lost`` event telling it
to reload the job, instead of a silent gap, and then whatever comes next.
The follow loop is shared with the library's document events (``stream_follow.py``).
Only entries the job event union accepts are relayed (``contracts/events.py``):
a worker outside the test suite publishes an event that breaks the contract
(logged there), and a reader skips it here rather than fold a shape it does not know.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from services.api.access import visible_job
from services.api.deps import CurrentUser, DbSession, StateDep
from services.api.errors import error_responses
from services.api.events.stream_access import stream_access
from services.api.events.stream_follow import Finished, FollowedStream, ResumeFrom, follow
from services.api.state import AppState
from services.common.contracts import keys
from services.common.contracts.events import JOB_TERMINAL, parse_event
from services.common.models import TERMINAL_STATUSES, Job

router = APIRouter(prefix="/v1/jobs", tags=["events"], responses=error_responses(401, 404, 422))


@router.get(
    "/{job_id}/events",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "text/event-stream: status, token, tool_start, tool_end, todo, "
            "events_lost and final events; access_revoked (the last event) when the "
            "reader's access ends; ': ping' comments while quiet",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        }
    },
)
def job_events(
    job_id: str,
    request: Request,
    db: DbSession,
    user: CurrentUser,
    state: StateDep,
    start: ResumeFrom,
) -> StreamingResponse:
    job = visible_job(db, user, job_id)
    # Once streaming starts the status is 200; check Redis first so an outage is a 503.
    state.redis.ping()
    return StreamingResponse(
        follow(request, state, _job_stream(request, state, str(job.id), start)),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


def _job_stream(request: Request, state: AppState, job_id: str, start: str) -> FollowedStream:
    async def finished() -> Finished | None:
        # The job's own "final" event is its terminal event: nothing is made from the row.
        return Finished() if await _job_finished(state, job_id) else None

    return FollowedStream(
        key=keys.job_stream(job_id),
        start=start,
        terminal=JOB_TERMINAL,
        reload_hint=f"the job: GET /v1/jobs/{job_id}",
        finished=finished,
        still_allowed=stream_access(
            request, state, lambda db, caller: visible_job(db, caller.user, job_id)
        ),
        check=parse_event,
    )


async def _job_finished(state: AppState, job_id: str) -> bool:
    def _check() -> bool:
        with state.session_factory() as db:
            job = db.get(Job, job_id)
            return job is None or job.status in TERMINAL_STATUSES

    try:
        return await asyncio.to_thread(_check)
    except Exception:  # database briefly unreachable: keep streaming, ask again later
        return False
