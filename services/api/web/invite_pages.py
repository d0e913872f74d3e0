"""/invite/{token}: a new member turns an admin's link into their own first API key.

Opening the link changes nothing (mail scanners open links); the form's POST,
CSRF-protected like /login, uses the invite up, makes the key, shows it once and
signs the browser in. A used, expired or unknown link is one 410 page that says
to ask for a new one.
"""

from __future__ import annotations

import hmac
import secrets
from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, Response

from services.api.api_keys import issue_key
from services.api.deps import DbSession, StateDep
from services.api.invites.service import InviteRefused, is_open, redeem
from services.api.web.cookie_auth import web_sessions
from services.api.web.login import set_form_cookie, set_session_cookie
from services.api.web.templating import render

router = APIRouter(include_in_schema=False)

INVITE_CSRF_COOKIE = "leaflab_invite_csrf"
FIRST_KEY_NAME = "first key (from an invite)"


def _gone(request: Request) -> Response:
    return render(request, "invite.html", None, status_code=410, state="gone")


@router.get("/invite/{token}", response_class=HTMLResponse)
def invite_form(token: str, request: Request, db: DbSession) -> Response:
    if not is_open(db, token):
        return _gone(request)
    csrf = secrets.token_urlsafe(24)
    response = render(request, "invite.html", None, state="open", invite_csrf=csrf, token=token)
    set_form_cookie(response, request, INVITE_CSRF_COOKIE, csrf, "/invite")
    return response


@router.post("/invite/{token}", response_class=HTMLResponse)
def accept_invite(
    token: str,
    request: Request,
    db: DbSession,
    state: StateDep,
    csrf_token: Annotated[str, Form(max_length=200)] = "",
) -> Response:
    expected = request.cookies.get(INVITE_CSRF_COOKIE, "")
    if not expected or not hmac.compare_digest(expected, csrf_token):
        return render(request, "invite.html", None, status_code=403, state="expired_form")
    try:
        user = redeem(db, token)
    except InviteRefused:
        return _gone(request)
    row, key = issue_key(db, user=user, name=FIRST_KEY_NAME)
    db.commit()  # the key must exist before a session names it
    session_token, _ = web_sessions(state).create(row.id)
    response = render(request, "invite.html", None, state="done", api_key=key, email=user.email)
    set_session_cookie(response, request, state, session_token)
    response.delete_cookie(INVITE_CSRF_COOKIE, path="/invite")
    # The key is in the page: never cached, never sent on as a referrer.
    response.headers["Cache-Control"] = "no-store"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response
