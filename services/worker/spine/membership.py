"""Whether a job's user may still act where the job runs: read at every step.

The API re-checks membership on every request (``services/api/access.py``),
but a job keeps running after its request: a member removed from the project
(or a user whose account was disabled) would otherwise go on reading and
rewriting project memory and library through jobs already queued or running.
So the runtime asks again before each step, and the memory tool at each call.
The memory tool (and anything else that needs the role) reads :func:`access_now`,
one autocommitted statement; the agent loop reads :func:`access_verdict`'s scalar
subquery inside the statements it already runs at each step boundary (the lease,
every fenced ledger write), so the check costs no statement of its own and reads
what was committed before that boundary.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

from services.common.one_statement import OneStatement, rows_of

ACCESS_SQL = text(
    """
    SELECT u.disabled, u.is_admin,
           (SELECT m.role FROM project_members m
             WHERE m.user_id = u.id AND m.project_id = CAST(:project_id AS uuid)) AS role
      FROM users u
     WHERE u.id = :user_id
    """
)
_ACCESS = OneStatement(ACCESS_SQL)

# The verdicts of :func:`access_verdict`, and why each one ends a job.
ALLOWED = "ok"
REVOKED_BECAUSE = {
    "gone": "this job's user no longer exists",
    "disabled": "this job's user account was disabled",
    "not_member": "this job's user is no longer a member of its project",
}


def access_verdict(*, user: str, project: str) -> str:
    """A scalar subquery: ``'ok'`` while ``user`` may act in ``project`` (SQL
    expressions: columns of the row a statement updates, or parameters), else a key
    of :data:`REVOKED_BECAUSE`. The same rules as :func:`access_now`."""
    return f"""COALESCE((
        SELECT CASE WHEN u.disabled THEN 'disabled'
                    WHEN {project} IS NULL OR u.is_admin THEN '{ALLOWED}'
                    WHEN EXISTS (SELECT 1 FROM project_members m
                                  WHERE m.user_id = u.id AND m.project_id = {project})
                    THEN '{ALLOWED}'
                    ELSE 'not_member' END
          FROM users u WHERE u.id = {user}), 'gone')"""


def revoked_reason(verdict: str) -> str | None:
    """Why a job may not go on, for a verdict of :func:`access_verdict` (None: it may)."""
    if verdict == ALLOWED:
        return None
    return REVOKED_BECAUSE.get(verdict, f"access check answered {verdict!r}")


@dataclass(frozen=True)
class Access:
    # Why the job may not go on (None: it may).
    revoked: str | None
    # The user's role in the job's project now ("" for a personal job or an admin
    # outside the project; None when revoked).
    role: str | None
    is_admin: bool = False

    @property
    def owns_project(self) -> bool:
        """May write project-wide state directly: a project owner or an admin."""
        return self.revoked is None and (self.is_admin or self.role == "owner")


def access_now(db: Session | Engine, *, user_id: uuid.UUID, project_id: uuid.UUID | None) -> Access:
    """On an ``Engine``: one autocommitted statement; in a ``Session``: its transaction."""
    rows = rows_of(db, _ACCESS, {"user_id": user_id, "project_id": project_id})
    row = rows[0] if rows else None
    if row is None:
        return Access(revoked=REVOKED_BECAUSE["gone"], role=None)
    if row.disabled:
        return Access(revoked=REVOKED_BECAUSE["disabled"], role=None)
    if project_id is None:
        return Access(revoked=None, role="", is_admin=bool(row.is_admin))
    if row.role is None and not row.is_admin:
        # Admins may work in any project (as the API lets them); anyone else only
        # while a member.
        return Access(revoked=REVOKED_BECAUSE["not_member"], role=None)
    return Access(revoked=None, role=row.role or "", is_admin=bool(row.is_admin))
