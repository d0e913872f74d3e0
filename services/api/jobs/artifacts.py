"""A job's artifacts: listed with safe display names, served so a browser never runs them.

Artifacts are files the model's code wrote: their bytes and names are
untrusted. Every download carries ``X-Content-Type-Options: nosniff``; only
raster images of a known type are served inline (as that image type), and
everything else — HTML, SVG, scripts, unknown types — is an attachment, so
opening one never renders it in Leaflab's origin.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Path, Response
from sqlalchemy import select

from services.api.access import visible_job
from services.api.bodies import NO_NUL
from services.api.deps import CurrentUser, DbSession
from services.api.errors import error_responses, not_found
from services.api.jobs.schemas import ArtifactList, ArtifactOut
from services.common.models import Artifact

router = APIRouter(prefix="/v1/jobs", tags=["jobs"], responses=error_responses(401, 404, 422))

# Raster types browsers render without running anything. SVG is not here: it
# can carry script.
INLINE_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
DISPLAY_NAME_CHARS = 200
MIME_RE = re.compile(r"^[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*$")


def display_name(name: str) -> str:
    """The last path part of ``name`` with control and bidi-override characters removed."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    # Categories Cc/Cf cover NUL, newlines, ESC and U+202E-style direction tricks.
    kept = "".join(ch for ch in base if unicodedata.category(ch) not in ("Cc", "Cf"))
    kept = kept.strip().strip(".") or "artifact"
    return kept[:DISPLAY_NAME_CHARS]


@router.get("/{job_id}/artifacts", response_model=ArtifactList)
def list_artifacts(job_id: str, db: DbSession, user: CurrentUser) -> ArtifactList:
    job = visible_job(db, user, job_id)
    rows = db.execute(
        select(Artifact.name, Artifact.size, Artifact.mime)
        .where(Artifact.job_id == job.id)
        .order_by(Artifact.name)
    )
    return ArtifactList(
        items=[
            ArtifactOut(
                name=r.name,
                display_name=display_name(r.name),
                size=r.size,
                mime=r.mime,
                url=f"/v1/jobs/{job.id}/artifacts/{quote(r.name, safe='')}",
            )
            for r in rows
        ]
    )


@router.get(
    "/{job_id}/artifacts/{name:path}",
    response_class=Response,
    responses={
        200: {
            "description": "The file: inline for png/jpeg/gif/webp, otherwise an attachment",
            "content": {"*/*": {"schema": {"type": "string", "format": "binary"}}},
        }
    },
)
def download_artifact(
    job_id: str,
    name: Annotated[str, Path(pattern=NO_NUL)],
    db: DbSession,
    user: CurrentUser,
) -> Response:
    job = visible_job(db, user, job_id)
    row = db.scalar(select(Artifact).where(Artifact.job_id == job.id, Artifact.name == name))
    if row is None:
        raise not_found("artifact")
    mime = row.mime.split(";", 1)[0].strip().lower()
    if not MIME_RE.match(mime):
        mime = "application/octet-stream"
    disposition = "inline" if mime in INLINE_IMAGE_TYPES else "attachment"
    filename = quote(display_name(row.name), safe="")
    return Response(
        content=row.content,
        media_type=mime,
        headers={
            "Content-Disposition": f"{disposition}; filename*=UTF-8''{filename}",
            "X-Content-Type-Options": "nosniff",
        },
    )
