"""The public /v1/library router (mounted on a small app) over the real library service."""

from __future__ import annotations

import secrets
from pathlib import Path

import redis
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from services.api.deps import hash_key
from services.api.errors import install_error_handlers
from services.api.library.router import router
from services.api.settings import ApiSettings
from services.api.state import AppState
from services.common.celery_app import build_celery
from services.common.models import ApiKey, Project, ProjectMember, User
from tests.library import hostile_pdfs
from tests.library.conftest import TOKEN, LibraryService, wait_terminal


def _user_with_key(db: Session, email: str) -> tuple[User, str]:
    user = User(email=email)
    db.add(user)
    db.flush()
    key = "lf_" + secrets.token_urlsafe(24)
    db.add(ApiKey(user_id=user.id, key_hash=hash_key(key), prefix=key[:8]))
    return user, key


def _app(library: LibraryService, engine: Engine, factory: sessionmaker[Session]) -> FastAPI:
    settings = ApiSettings(library_url=library.url, internal_token=TOKEN)
    app = FastAPI()
    install_error_handlers(app)
    import redis.asyncio as aioredis

    url = settings.require_redis_url()
    app.state.leaflab = AppState(
        settings,
        engine,
        factory,
        redis.Redis.from_url(url),
        aioredis.Redis.from_url(url),
        build_celery(settings),
    )
    app.include_router(router)
    return app


class TestProjectVisibility:
    def test_project_documents_invisible_to_non_members(
        self,
        library: LibraryService,
        engine: Engine,
        session_factory: sessionmaker[Session],
        unique: str,
        tmp_path: Path,
    ) -> None:
        with session_factory() as db, db.begin():
            member, member_key = _user_with_key(db, f"m-{unique}@example.org")
            _, outsider_key = _user_with_key(db, f"o-{unique}@example.org")
            project = Project(name=f"optics-{unique}")
            db.add(project)
            db.flush()
            db.add(ProjectMember(project_id=project.id, user_id=member.id))
        client = TestClient(_app(library, engine, session_factory))
        as_member = {"Authorization": f"Bearer {member_key}"}
        as_outsider = {"Authorization": f"Bearer {outsider_key}"}
        pdf = hostile_pdfs.theorem_pdf(tmp_path / "optics.pdf")
        with pdf.open("rb") as fh:
            resp = client.post(
                "/v1/library/documents",
                headers=as_member,
                files={"file": ("optics.pdf", fh, "application/pdf")},
                data={"project": f"optics-{unique}"},
            )
        assert resp.status_code == 202, resp.text
        doc_id = resp.json()["id"]
        internal = library.headers(member.id, [f"project:{project.id}"])
        import httpx

        with httpx.Client(timeout=30) as raw:
            assert wait_terminal(raw, library, internal, doc_id)["status"] == "ready"

        listed = client.get("/v1/library/documents", headers=as_member).json()["items"]
        assert doc_id in [d["id"] for d in listed]
        hits = client.get(
            "/v1/library/search",
            headers=as_member,
            params={"q": "quasi-convex flows", "project": f"optics-{unique}"},
        ).json()
        assert hits["items"][0]["document_id"] == doc_id

        assert client.get(f"/v1/library/documents/{doc_id}", headers=as_outsider).status_code == 404
        listed = client.get("/v1/library/documents", headers=as_outsider).json()["items"]
        assert doc_id not in [d["id"] for d in listed]
        hits = client.get(
            "/v1/library/search", headers=as_outsider, params={"q": "quasi-convex flows"}
        ).json()["items"]
        assert doc_id not in [h["document_id"] for h in hits]
        resp = client.get(
            "/v1/library/search",
            headers=as_outsider,
            params={"q": "x", "project": f"optics-{unique}"},
        )
        assert resp.status_code == 404 and resp.json()["error"]["code"] == "not_found"
        assert client.get("/v1/library/documents").status_code == 401
        resp = client.get(
            "/v1/library/search", headers=as_member, params={"q": "x", "mode": "bogus"}
        )
        assert resp.status_code == 400
