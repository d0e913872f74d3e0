"""The edit-chain job every fault test runs, and the checks that find a repeated effect.

A chain job writes ``chain.txt`` once, then appends ``edit 1`` … ``edit N`` one
model turn at a time by replacing a ``<<next>>`` marker. Every edit can be
applied again (the marker is always there), so an edit that runs twice leaves a
duplicate line, and a repeated ``write_file`` wipes earlier lines: the file
alone shows any repeated or lost effect. The ledger checks add what the file
cannot show: one step row and one session message per model turn and tool call.
"""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import Job, JobStep, Message

CHAIN_FILE = "chain.txt"
MARKER = "<<next>>"


def chain_script(
    *, edits: int, latency_ms: int, slow_slots: tuple[int, ...] = ()
) -> dict[str, Any]:
    """``edits`` + 2 model turns: write, ``edits`` appends, a final answer.

    Each of ``slow_slots`` makes that turn take 4 s, a window in which a test can
    freeze or cut off a worker while it waits on the model (holding the lease).
    """
    replies: list[dict[str, Any]] = [
        {
            "tool_calls": [
                {
                    "name": "write_file",
                    "arguments": {"path": CHAIN_FILE, "content": f"edits:\n{MARKER}\n"},
                }
            ]
        }
    ]
    for i in range(1, edits + 1):
        edit = {"path": CHAIN_FILE, "old_string": MARKER, "new_string": f"edit {i}\n{MARKER}"}
        replies.append({"tool_calls": [{"name": "edit_file", "arguments": edit}]})
    replies.append({"content": f"chain of {edits} edits done"})
    for slot in slow_slots:
        replies[slot] = {**replies[slot], "delay_ms": 4000}
    return {"latency_ms": latency_ms, "replies": replies}


def expected_chain(edits: int) -> str:
    return "edits:\n" + "".join(f"edit {i}\n" for i in range(1, edits + 1)) + f"{MARKER}\n"


def chain_text(home: Path, session_id: str) -> str:
    return (home / "workspaces" / session_id / CHAIN_FILE).read_text()


def ledger_problems(factory: sessionmaker[Session], job_id: str, *, edits: int) -> list[str]:
    """Everything wrong with one finished chain job's ledger and history; [] when clean."""
    problems: list[str] = []
    jid = uuid.UUID(job_id)
    with factory() as db:
        job = db.get(Job, jid)
        assert job is not None
        steps = db.scalars(select(JobStep).where(JobStep.job_id == jid)).all()
        messages = db.scalars(select(Message).where(Message.job_id == jid)).all()
    if job.status != "succeeded":
        problems.append(f"job {job_id} is {job.status}: {job.error}")
    if job.lease_owner is not None or job.lease_until is not None:
        problems.append(
            f"job {job_id} lease not released: {job.lease_owner} until {job.lease_until}"
        )
    tools = [s for s in steps if s.kind == "tool"]
    llms = [s for s in steps if s.kind == "llm"]
    if len(tools) != edits + 1 or len(llms) != edits + 2:
        problems.append(f"job {job_id}: {len(llms)} model and {len(tools)} tool steps")
    for s in tools:
        if s.status != "succeeded":
            problems.append(f"job {job_id} step {s.step_key}: {s.status} {s.error}")
    seqs = [s.seq for s in steps]
    if len(set(seqs)) != len(seqs):
        problems.append(f"job {job_id}: ledger seq repeated {sorted(seqs)}")
    roles = Counter(m.role for m in messages)
    if roles["assistant"] != edits + 2 or roles["tool"] != edits + 1:
        problems.append(f"job {job_id}: session history has {dict(roles)}")
    per_call = Counter(m.tool_call_id for m in messages if m.role == "tool")
    repeated = [call for call, n in per_call.items() if n > 1]
    if repeated:
        problems.append(f"job {job_id}: tool results recorded twice for {repeated}")
    return problems
