"""Browser sessions' CSRF checks, without a browser: a real API process and httpx.

A wrong but non-empty token is as refused as a missing one — on API writes made
with the session cookie, on the login form and on logout — and a refused logout
leaves the session working (no one can log a user out from another site).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy.orm import Session, sessionmaker

from tests.conftest import Stack
from tests.fixtures.builders import make_user
from tests.fixtures.processes import Services


@pytest.fixture(scope="module")
def api_url(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    svc = Services(stack, tmp_path_factory.mktemp("csrf"))
    try:
        yield svc.api()
    finally:
        svc.stop()


def _logged_in(url: str, key: str) -> tuple[httpx.Client, str]:
    """A client holding a session cookie, and the session's CSRF token from a page."""
    client = httpx.Client(base_url=url, timeout=30)
    form_token = client.get("/login").cookies["leaflab_login_csrf"]
    resp = client.post("/login", data={"api_key": key, "csrf_token": form_token, "next": "/"})
    assert resp.status_code == 303, resp.text
    page = client.get("/").text
    match = re.search(r'<meta name="csrf-token" content="([^"]+)"', page)
    assert match, page[:500]
    return client, match.group(1)


def _altered(token: str) -> str:
    """The token with its last character changed (never to itself: a token that already
    ends in "A" once made this "wrong" token the right one, and the test red by chance)."""
    return token[:-1] + ("B" if token.endswith("A") else "A")


def _titles(client: httpx.Client) -> list[str]:
    return [s["title"] for s in client.get("/v1/sessions").json()["items"]]


def test_a_wrong_non_empty_token_is_refused_like_a_missing_one(
    api_url: str, session_factory: sessionmaker[Session]
) -> None:
    client, csrf = _logged_in(api_url, make_user(session_factory).key)
    for headers in ({}, {"X-CSRF-Token": "x"}, {"X-CSRF-Token": _altered(csrf)}):
        resp = client.post("/v1/sessions", json={"title": "forged"}, headers=headers)
        assert resp.status_code == 403, (headers, resp.text)
        assert resp.json()["error"]["code"] == "csrf_failed"
    assert "forged" not in _titles(client)
    ok = client.post("/v1/sessions", json={"title": "mine"}, headers={"X-CSRF-Token": csrf})
    assert ok.status_code == 201, ok.text


def test_the_login_form_refuses_a_wrong_token(
    api_url: str, session_factory: sessionmaker[Session]
) -> None:
    key = make_user(session_factory).key
    with httpx.Client(base_url=api_url, timeout=30) as client:
        real = client.get("/login").cookies["leaflab_login_csrf"]
        resp = client.post("/login", data={"api_key": key, "csrf_token": real + "x"})
        assert resp.status_code == 403
        assert "leaflab_session" not in resp.headers.get("set-cookie", "")


def test_logout_needs_its_token_and_a_refused_logout_changes_nothing(
    api_url: str, session_factory: sessionmaker[Session]
) -> None:
    client, csrf = _logged_in(api_url, make_user(session_factory).key)
    for data in ({}, {"csrf_token": "x"}, {"csrf_token": _altered(csrf)}):
        resp = client.post("/logout", data=data)
        assert resp.status_code == 403, (data, resp.status_code)
        assert client.get("/v1/sessions").status_code == 200  # still logged in
    old_cookie = client.cookies["leaflab_session"]
    resp = client.post("/logout", data={"csrf_token": csrf})
    assert resp.status_code == 303
    # The old cookie no longer opens anything: the session is gone server-side.
    stale = httpx.Client(base_url=api_url, cookies={"leaflab_session": old_cookie}, timeout=30)
    assert stale.get("/v1/sessions").status_code == 401
