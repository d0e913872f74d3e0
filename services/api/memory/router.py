"""Project memory proposals: ``GET /v1/projects/{project}/memory/proposals``,
``POST /v1/projects/{project}/memory/proposals/{proposal_id}``.

Project memory enters the system prompt of every member's project sessions,
so a member who is not an owner cannot write it directly: her write (the
memory tool in her job) is held as a proposal. Any current member of the
project lists them (with the document as it is now); only an ``owner`` of the
project, or an admin, decides — a member gets 403, anyone else 404, as for
every project object (``services/api/access.py``).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Query

from services.api.access import member_project, parse_id, project_role
from services.api.deps import CurrentUser, DbSession
from services.api.errors import error_responses
from services.api.memory import service
from services.api.memory.schemas import ProposalDecide, ProposalList, ProposalOut
from services.common.contracts.errors import ServiceError
from services.common.models.memory import ProposalStatus

router = APIRouter(prefix="/v1/projects", tags=["memory"], responses=error_responses(401, 404, 422))


@router.get("/{project_id}/memory/proposals", response_model=ProposalList)
def list_proposals(
    project_id: str,
    db: DbSession,
    user: CurrentUser,
    status: Annotated[ProposalStatus | None, Query()] = None,
) -> ProposalList:
    """The project's memory proposals (``project_id``: its id or name), oldest first."""
    project = member_project(db, user, project_id)
    return ProposalList(items=service.list_proposals(db, project=project, status=status))


@router.post(
    "/{project_id}/memory/proposals/{proposal_id}",
    response_model=ProposalOut,
    responses=error_responses(403, 409, 413),
)
def decide_proposal(
    project_id: str,
    proposal_id: str,
    body: Annotated[ProposalDecide, Body()],
    db: DbSession,
    user: CurrentUser,
) -> ProposalOut:
    """Approve (the text becomes the project's document) or reject a pending proposal.

    Only a project owner or an admin may. Approving a proposal whose document
    changed since it was made leaves the document alone and answers it ``failed``."""
    project = member_project(db, user, project_id)
    if not user.is_admin and project_role(db, user_id=user.id, project_id=project.id) != "owner":
        raise ServiceError(403, "forbidden", "only a project owner may decide memory proposals")
    return service.decide(
        db,
        project=project,
        proposal_id=parse_id(proposal_id, "proposal"),
        decision=body.decision,
        user=user,
    )
