"""How one advance of a job ended."""

from __future__ import annotations

from enum import StrEnum


class Outcome(StrEnum):
    FINISHED = "finished"  # terminal status written
    SLICE_EXPIRED = "slice_expired"  # more to do: re-enqueue
    WAITING = "waiting"  # blocked on something else (earlier session job, children)
    # parked (budget exhausted, or waiting for its model) with the lease released
    PAUSED = "paused"
    LEASE_LOST = "lease_lost"  # another worker took over: write nothing more
