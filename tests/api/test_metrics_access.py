"""The API's /metrics is closed by default: an admin's key or the metrics token.

Against real API processes: one without LEAFLAB_METRICS_TOKEN (the default),
where no credential, a forged one, a member's key or an admin's project-scoped
key are refused and an admin's key reads the metrics; one with the token, where
the token (what ``leaflab up``'s Prometheus config sends) reads them too.
"""

from __future__ import annotations

import httpx
from sqlalchemy.orm import Session, sessionmaker

from services.api.admin.service import create_api_key
from services.common.db import transaction
from services.common.models import Project, User
from tests.fixtures.builders import make_project, make_user
from tests.fixtures.processes import Services


def _get(url: str, token: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.get(f"{url}/metrics", headers=headers, timeout=10)


def test_metrics_are_for_admins_and_the_token_only(
    services: Services, session_factory: sessionmaker[Session]
) -> None:
    url = services.api()  # LEAFLAB_METRICS_TOKEN unset: the default
    member, admin = make_user(session_factory), make_user(session_factory, admin=True)
    project = make_project(session_factory, admin)
    with transaction(session_factory) as db:
        row = db.get(User, admin.id)
        scope = db.query(Project).filter(Project.name == project).one()
        assert row is not None
        _, scoped_admin = create_api_key(db, user=row, project=scope)
    for token, status in ((None, 401), ("lf_forged", 401), (member.key, 403), (scoped_admin, 403)):
        resp = _get(url, token)
        assert resp.status_code == status, (token, resp.text)
        assert "leaflab_" not in resp.text
        assert resp.json()["error"]["code"] in ("unauthorized", "forbidden")
    ok = _get(url, admin.key)
    assert ok.status_code == 200 and "leaflab_http_requests" in ok.text


def test_the_metrics_token_reads_them_as_a_scraper_would(services: Services) -> None:
    services.env["LEAFLAB_METRICS_TOKEN"] = "scrape-secret-7"
    url = services.api()
    assert _get(url).status_code == 401
    assert _get(url, "scrape-secret-8").status_code == 401
    ok = _get(url, "scrape-secret-7")
    assert ok.status_code == 200 and "leaflab_" in ok.text
