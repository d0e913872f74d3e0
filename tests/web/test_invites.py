"""Invite links: an admin's one-time, expiring link with which a new member makes their
own first API key and is signed in (no key pasted from a chat message)."""

from __future__ import annotations

import httpx
from playwright.sync_api import BrowserContext, expect
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from services.api.invites.service import token_hash
from tests.fixtures.builders import client_for, make_user
from tests.fixtures.processes import RunningStack
from tests.web.browser import login


def _user_id(admin: httpx.Client, email: str) -> str:
    users = admin.get("/v1/admin/users").json()["items"]
    return next(u["id"] for u in users if u["email"] == email)


class TestInviteLinks:
    def test_the_admin_page_invites_and_the_member_makes_a_working_key_once(
        self, running: RunningStack, context: BrowserContext, session_factory: sessionmaker[Session]
    ) -> None:
        admin_user = make_user(session_factory, admin=True)
        admin = client_for(running.url, admin_user)
        email = "newcomer-" + admin_user.email
        assert admin.post("/v1/admin/users", json={"email": email}).status_code == 201
        page = login(context, running.url, admin_user.key, next_path="/admin")
        page.wait_for_selector("body[data-admin-ready='1']")
        page.get_by_role("button", name=f"Invite link for {email}").click()
        url = page.get_by_test_id("invite-url").inner_text()
        assert url.startswith(f"{running.url}/invite/"), url

        # The newcomer's own browser: opening the link uses nothing up, the button does.
        context.clear_cookies()
        newcomer = context.new_page()
        newcomer.goto(url)
        newcomer.goto(url)
        expect(newcomer.get_by_test_id("invite")).to_have_attribute("data-state", "open")
        newcomer.get_by_role("button", name="Create my API key").click()
        key = newcomer.get_by_test_id("invite-key").inner_text()
        assert key.startswith("lf_")
        newcomer.get_by_test_id("invite-continue").click()
        expect(newcomer.locator("body")).to_contain_text(email)  # signed in, as them
        me = httpx.get(f"{running.url}/v1/sessions", headers={"Authorization": f"Bearer {key}"})
        assert me.status_code == 200, me.text

        # Once only: the same link again, in any browser, is gone.
        again = httpx.get(url)
        assert again.status_code == 410 and "no longer works" in again.text
        csrf = "x"
        replay = httpx.post(url, data={"csrf_token": csrf}, cookies={"leaflab_invite_csrf": csrf})
        assert replay.status_code == 410 and "lf_" not in replay.text

    def test_an_expired_or_unknown_link_and_a_member_asking_are_refused(
        self, running: RunningStack, session_factory: sessionmaker[Session]
    ) -> None:
        admin = client_for(running.url, make_user(session_factory, admin=True))
        member = make_user(session_factory)
        made = admin.post(f"/v1/admin/users/{_user_id(admin, member.email)}/invites", json={})
        assert made.status_code == 201, made.text
        token = made.json()["path"].rsplit("/", 1)[1]
        with session_factory() as db, db.begin():
            db.execute(
                text(
                    "UPDATE invites SET expires_at = now() - interval '1 second'"
                    " WHERE token_hash = :h"
                ),
                {"h": token_hash(token)},
            )
        csrf = "y"
        for path in (made.json()["path"], "/invite/not-a-token", "/invite/" + "a" * 5000):
            shown = httpx.get(running.url + path)
            assert shown.status_code in (410, 404), (path, shown.status_code)
            used = httpx.post(
                running.url + path, data={"csrf_token": csrf}, cookies={"leaflab_invite_csrf": csrf}
            )
            assert used.status_code in (410, 404) and "lf_" not in used.text, path
        # Without the form's CSRF cookie nothing happens, whatever the token.
        fresh = admin.post(f"/v1/admin/users/{_user_id(admin, member.email)}/invites", json={})
        forged = httpx.post(running.url + fresh.json()["path"], data={"csrf_token": "z"})
        assert forged.status_code == 403
        assert httpx.get(running.url + fresh.json()["path"]).status_code == 200  # still open
        # Only admins invite; the hours are bounded.
        mine = client_for(running.url, member)
        asked = mine.post(f"/v1/admin/users/{_user_id(admin, member.email)}/invites", json={})
        assert asked.status_code == 403
        long = admin.post(
            f"/v1/admin/users/{_user_id(admin, member.email)}/invites",
            json={"expires_hours": 10**6},
        )
        assert long.status_code == 422
