"""Stable ledger keys and simulator/router conversation keys of a survey's steps.

One owner for these spellings: the runner writes them, tests and the web read them.
"""

from __future__ import annotations

from services.common.surveys import STAGES

__all__ = ["STAGES", "conversation", "item_key", "stage_key"]


def stage_key(stage: str) -> str:
    """The step that marks a whole stage done (its result is the stage's data)."""
    return f"survey:{stage}"


def item_key(stage: str, item: str) -> str:
    """One unit of a parallel stage: a paper's note, a section, a section's check."""
    return f"survey:{stage}:{item}"


def conversation(session_id: object, stage: str, item: str = "") -> str:
    """The conversation key sent with a stage's model call.

    Keyed by the session (known before the job exists, like a turn's key) and the
    unit of work, so each call is its own short conversation and a repair retry is
    its second slot.
    """
    tail = f":{item}" if item else ""
    return f"{session_id}:survey:{stage}{tail}"
