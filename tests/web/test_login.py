"""Logging in to the web pages: the form, the cookie's flags, CSRF, logout, revocation."""

from __future__ import annotations

import httpx
from playwright.sync_api import BrowserContext
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import ApiKey
from tests.fixtures.builders import TestUser, make_user
from tests.fixtures.processes import RunningStack
from tests.web.browser import login, screenshot_dir


def _session_cookie(context: BrowserContext) -> dict:
    cookies = [c for c in context.cookies() if c["name"] == "leaflab_session"]
    assert len(cookies) == 1, context.cookies()
    return dict(cookies[0])


class TestLoginForm:
    def test_pages_redirect_to_login_and_a_wrong_key_is_refused(
        self, running: RunningStack, context: BrowserContext
    ) -> None:
        page = context.new_page()
        page.goto(f"{running.url}/jobs")
        assert page.url.startswith(f"{running.url}/login?next=")
        page.fill("#api_key", "lf_not-a-real-key")
        page.click("button[type=submit]")
        assert page.get_by_test_id("login-error").inner_text() == "invalid API key"
        assert not [c for c in context.cookies() if c["name"] == "leaflab_session"]
        page.screenshot(path=str(screenshot_dir() / "login.png"))

    def test_pages_load_without_a_missing_file_not_even_a_favicon(
        self, running: RunningStack, context: BrowserContext, session_factory: sessionmaker[Session]
    ) -> None:
        page = login(context, running.url, make_user(session_factory).key, next_path="/jobs")
        missing: list[str] = []
        page.on("response", lambda r: missing.append(r.url) if r.status >= 400 else None)
        page.reload(wait_until="networkidle")
        icon = page.evaluate(
            "fetch(document.querySelector('link[rel=icon]').href).then(r => r.status)"
        )
        assert icon == 200
        assert missing == [], missing
        with httpx.Client(base_url=running.url) as client:
            fallback = client.get("/favicon.ico")
        assert fallback.status_code == 200 and fallback.headers["content-type"].startswith("image/")

    def test_login_sets_an_httponly_lax_cookie_and_never_shows_the_key(
        self, running: RunningStack, context: BrowserContext, session_factory: sessionmaker[Session]
    ) -> None:
        user = make_user(session_factory)
        page = login(context, running.url, user.key, next_path="/jobs")
        cookie = _session_cookie(context)
        assert cookie["httpOnly"] is True
        assert cookie["sameSite"] == "Lax"
        assert cookie["secure"] is False  # plain http here; the TLS case is below
        assert "leaflab_session" not in page.evaluate("document.cookie")
        assert user.key not in page.content()
        assert user.email in page.inner_text("header")

    def test_behind_tls_the_cookie_is_secure(
        self, running: RunningStack, session_factory: sessionmaker[Session]
    ) -> None:
        user = make_user(session_factory)
        with httpx.Client(base_url=running.url) as client:
            form = client.get("/login")
            token = form.cookies["leaflab_login_csrf"]
            resp = client.post(
                "/login",
                data={"api_key": user.key, "csrf_token": token, "next": "/"},
                headers={"X-Forwarded-Proto": "https"},
            )
        assert resp.status_code == 303
        set_cookie = resp.headers["set-cookie"]
        assert "leaflab_session=" in set_cookie and "Secure" in set_cookie
        assert "HttpOnly" in set_cookie and "SameSite=lax" in set_cookie

    def test_login_needs_its_form_token_and_never_redirects_off_site(
        self, running: RunningStack, context: BrowserContext, session_factory: sessionmaker[Session]
    ) -> None:
        user = make_user(session_factory)
        with httpx.Client(base_url=running.url) as client:
            forged = client.post("/login", data={"api_key": user.key, "csrf_token": "x"})
        assert forged.status_code == 403
        assert "leaflab_session" not in forged.headers.get("set-cookie", "")
        page = login(context, running.url, user.key, next_path="//evil.example/", lands_on="/")
        assert page.url == f"{running.url}/"

    def test_without_sso_settings_there_is_no_sign_in_button_and_no_route(
        self, running: RunningStack
    ) -> None:
        with httpx.Client(base_url=running.url) as client:
            assert 'data-testid="sso-sign-in"' not in client.get("/login").text
            assert client.get("/login/oidc").status_code == 404
            assert client.get("/login/oidc/callback?code=x&state=y").status_code == 404


class TestCsrf:
    def test_a_write_without_the_csrf_header_or_from_another_origin_is_refused(
        self, running: RunningStack, context: BrowserContext, session_factory: sessionmaker[Session]
    ) -> None:
        page = login(context, running.url, make_user(session_factory).key)
        without = page.evaluate(
            """async () => (await fetch('/v1/sessions', {method: 'POST',
                 headers: {'Content-Type': 'application/json'}, body: '{}'})).status"""
        )
        assert without == 403
        with_token = page.evaluate(
            """async () => (await fetch('/v1/sessions', {method: 'POST',
                 headers: {'Content-Type': 'application/json',
                           'X-CSRF-Token': document.querySelector('meta[name=csrf-token]').content},
                 body: JSON.stringify({title: 'from the browser'})})).status"""
        )
        assert with_token == 201
        csrf = page.get_attribute("meta[name=csrf-token]", "content")
        cross = context.request.post(
            f"{running.url}/v1/sessions",
            data={"title": "forged"},
            headers={"Origin": "http://evil.example", "X-CSRF-Token": csrf or ""},
        )
        assert cross.status == 403
        assert cross.json()["error"]["code"] == "csrf_failed"
        listed = page.evaluate("async () => (await (await fetch('/v1/sessions')).json()).items")
        assert [s["title"] for s in listed] == ["from the browser"]


class TestSessionEnd:
    def test_logout_ends_the_session_for_a_copied_cookie_too(
        self, running: RunningStack, context: BrowserContext, session_factory: sessionmaker[Session]
    ) -> None:
        page = login(context, running.url, make_user(session_factory).key)
        stolen = _session_cookie(context)["value"]
        page.click("header form.logout button")
        page.wait_for_url(f"{running.url}/login")
        with httpx.Client(base_url=running.url, cookies={"leaflab_session": stolen}) as client:
            assert client.get("/v1/sessions").status_code == 401
            assert client.get("/jobs").status_code == 303

    def test_revoking_the_key_ends_its_browser_sessions(
        self, running: RunningStack, context: BrowserContext, session_factory: sessionmaker[Session]
    ) -> None:
        user: TestUser = make_user(session_factory)
        page = login(context, running.url, user.key, next_path="/jobs")
        with session_factory() as db, db.begin():
            db.execute(update(ApiKey).where(ApiKey.user_id == user.id).values(revoked_at=_now()))
        page.reload()
        assert page.url.startswith(f"{running.url}/login")


class TestAdminOnly:
    def test_a_member_gets_403_on_admin_and_an_admin_gets_the_page(
        self, running: RunningStack, context: BrowserContext, session_factory: sessionmaker[Session]
    ) -> None:
        member = login(context, running.url, make_user(session_factory).key)
        assert member.locator("nav a[href='/admin']").count() == 0
        resp = member.goto(f"{running.url}/admin")
        assert resp is not None and resp.status == 403
        admin_ctx = context.browser.new_context() if context.browser else None
        assert admin_ctx is not None
        try:
            admin = login(admin_ctx, running.url, make_user(session_factory, admin=True).key)
            resp = admin.goto(f"{running.url}/admin")
            assert resp is not None and resp.status == 200
        finally:
            admin_ctx.close()


def _now():  # type: ignore[no-untyped-def]
    from datetime import UTC, datetime

    return datetime.now(UTC)
