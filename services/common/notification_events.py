"""The events a user hears of in the app and by e-mail, and who a project's e-mail goes to.

Kept apart from the ORM so the CLI can offer them without importing SQLAlchemy.
The migration ``email_notifications`` fires on the same statuses (its trigger's
WHEN) and uses these events as the default of a user without settings. A
cancel is not among them: whoever cancels already knows.
"""

from __future__ import annotations

NOTIFY_EVENTS = (
    "job.succeeded",
    "job.failed",
    "job.waiting_approval",
    "job.budget_exhausted",
)

# Who a project's e-mail reaches: its owners only, or every member.
PROJECT_RECIPIENTS = ("owners", "members")
