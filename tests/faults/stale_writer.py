"""What the fencing tests need: a worker caught waiting on the model, and proof it wrote nothing.

The chain's slow turn (see chains.chain_script) keeps the victim worker inside
one model call for seconds, holding the job's lease; the test freezes or cuts
it off there, lets the lease expire and another worker finish the job, then
wakes the victim. Its model reply is already waiting; the first thing it tries
is to record it, and the fence must refuse.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import Job, JobStep, Message
from tests.fixtures.processes import Proc

REFUSAL = "write refused"


def wait_model_request(sim_url: str, conversation: str, slot: int, timeout_s: float = 60) -> None:
    """Until the simulator has been asked for ``slot`` of ``conversation``."""
    base = sim_url.removesuffix("/v1")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        conv = httpx.get(f"{base}/_sim/stats", timeout=5).json()["conversations"].get(conversation)
        if conv and conv["attempts"].get(str(slot), 0) >= 1:
            return
        time.sleep(0.05)
    raise AssertionError(f"the worker never asked the model for turn {slot}")


def ledger_snapshot(factory: sessionmaker[Session], job_id: str) -> dict[str, Any]:
    """Every row a stale writer could touch: the job, its steps and its messages."""
    jid = uuid.UUID(job_id)
    with factory() as db:
        job = db.get(Job, jid)
        assert job is not None
        steps = db.scalars(select(JobStep).where(JobStep.job_id == jid).order_by(JobStep.seq))
        messages = db.scalars(select(Message).where(Message.job_id == jid).order_by(Message.seq))
        return {
            "job": (job.status, job.fence, job.updated_at, job.input_tokens, job.result),
            "steps": [
                (s.seq, s.step_key, s.status, s.executions, s.fence, s.result) for s in steps
            ],
            "messages": [(m.seq, m.role, m.content, m.tool_call_id) for m in messages],
        }


def wait_refusal(victim: Proc, timeout_s: float = 60) -> str | None:
    """The victim's log line saying its write was refused by the fence; None if none came.

    Returns rather than fails, so a test checks the ledger first: with the fence
    broken, the duplicate effect is the failure worth reading.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        lines = [line for line in victim.log().splitlines() if REFUSAL in line]
        if lines:
            return lines[0]
        time.sleep(0.1)
    return None
