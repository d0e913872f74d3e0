"""Who may read which library document through the API: one rule for every route.

The acting user's collections are their personal one, every project's they
belong to and the lab's; a key scoped to a project sees only that project's collection. Every
route that names a document by id (the document, its references, PDF and
events) looks the document up here first, so a document outside the caller's
readable set is the same 404 as one that does not exist — before anything is
forwarded to the library service, which knows the user but not the key's scope.
Deleting one also needs the right to change it (``may_remove``): a reader who
may not gets 403.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import Depends
from sqlalchemy.orm import Session

from services.api.access import key_scope
from services.api.deps import CurrentUser, DbSession, StateDep
from services.common.contracts.collections import Collection
from services.common.contracts.errors import ServiceError
from services.common.documents.collections import (
    LAB_COLLECTION,
    may_remove,
    member_projects,
)
from services.common.models import Document


class LibraryAccess:
    """The acting user and the projects they belong to (for naming a target project).

    With a key scoped to a project (``scope``), that project's collection is
    the only one: uploads go there, and lists, reads and searches see only it.
    """

    def __init__(
        self,
        user_id: uuid.UUID,
        projects: dict[str, uuid.UUID],
        token: str,
        scope: uuid.UUID | None = None,
    ) -> None:
        self.user_id = user_id
        self.scope = scope
        if scope is not None:
            projects = {ref: pid for ref, pid in projects.items() if pid == scope}
        self.projects = projects  # name and id (as text) -> project id
        self.token = token

    def scoped_collections(self) -> list[Collection] | None:
        """The collections a scoped key is limited to (None: no limit)."""
        return None if self.scope is None else [Collection.project(self.scope)]

    def readable(self) -> set[Collection]:
        """The collections the caller may read: a scoped key sees only its project."""
        scoped = self.scoped_collections()
        if scoped is not None:
            return set(scoped)
        projects = {Collection.project(pid) for pid in self.projects.values()}
        return {Collection.personal(self.user_id), *projects, LAB_COLLECTION}

    def collection_name(self, collection: str) -> str:
        """How a page names a readable collection: "personal", "lab" or the project's name."""
        if collection == LAB_COLLECTION:
            return "lab"
        if collection == Collection.personal(self.user_id):
            return "personal"
        names: dict[str, str] = {Collection.project(pid): ref for ref, pid in self.projects.items()}
        return "project " + names.get(collection, "?")

    def headers(self) -> dict[str, str]:
        # No collections: the library derives them from the user, never from us.
        return {"X-Leaflab-Internal": self.token, "X-Leaflab-User": str(self.user_id)}

    def collection_for(self, project: Any, collection: Any = None) -> Collection:
        """Where an upload goes: ``collection="lab"`` for the lab's, else the named
        project's, else the key's project, else the uploader's own."""
        if collection not in (None, ""):
            return self._lab_target(project, collection)
        if (project is None or project == "") and self.scope is not None:
            return Collection.project(self.scope)
        if project is None or project == "":
            return Collection.personal(self.user_id)
        if not isinstance(project, str):
            raise ServiceError(400, "invalid_request", "project must be a string")
        pid = self.projects.get(project)
        if pid is None:
            # Not a member looks the same as not existing (no probing for names),
            # but the message names both, so a member-to-be knows whom to ask.
            raise ServiceError(
                404,
                "not_found",
                f"project {project!r} not found, or you are not a member of it "
                "(a project owner or an admin can add you)",
            )
        return Collection.project(pid)

    def _lab_target(self, project: Any, collection: Any) -> Collection:
        if collection != LAB_COLLECTION:
            raise ServiceError(400, "invalid_request", 'collection must be "lab" (or left out)')
        if project not in (None, ""):
            raise ServiceError(
                400, "invalid_request", "give a project or the lab collection, not both"
            )
        if self.scope is not None:
            raise ServiceError(
                403, "forbidden", "a key scoped to a project adds only to that project's library"
            )
        return LAB_COLLECTION


def library_access(user: CurrentUser, db: DbSession, state: StateDep) -> LibraryAccess:
    return LibraryAccess(
        user.id, member_projects(db, user.id), state.settings.internal_token, key_scope(db)
    )


AccessDep = Annotated[LibraryAccess, Depends(library_access)]


def visible_document(db: Session, access: LibraryAccess, document_id: str) -> Document:
    """The document, if the caller may read it; any other case is the same 404."""
    try:
        ident = uuid.UUID(document_id)
    except ValueError:
        raise ServiceError(
            404, "not_found", "document not found (a document id is a UUID)"
        ) from None
    doc = db.get(Document, ident)
    if doc is None or doc.collection not in access.readable():
        raise ServiceError(404, "not_found", "document not found")
    return doc


def removable_document(db: Session, access: LibraryAccess, document_id: str) -> Document:
    """The document, if the caller may delete it; 403 when they may only read it."""
    doc = visible_document(db, access, document_id)
    if not may_remove(db, user_id=access.user_id, doc=doc):
        raise ServiceError(
            403,
            "forbidden",
            "only the document's uploader, an owner of its project or an admin may delete it",
        )
    return doc
