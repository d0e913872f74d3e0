"""The events a webhook may ask for: "job." + a job status that notifies.

Kept apart from the ORM so the CLI can offer them without importing SQLAlchemy.
The migration ``webhooks`` fires on the same statuses (its trigger's WHEN).
"""

from __future__ import annotations

WEBHOOK_EVENTS = (
    "job.succeeded",
    "job.failed",
    "job.cancelled",
    "job.waiting_approval",
    "job.budget_exhausted",
)
