"""Verified ID-token claims → a Leaflab user with the mapped roles, and a session key.

The e-mail is the account: only an ``email_verified`` address signs in (anyone can
type an unverified one into some providers' sign-up form), an existing user with
that address is that user, and a new address becomes a new, non-admin user. The
role claim's values are looked up in ``LEAFLAB_OIDC_ROLE_MAP``; what they grant is
added (admin, project roles, a member raised to owner) and never taken away here.

Browser sessions name an API key (services/api/web/session_store.py), so a sign-in
makes a key that expires with the session and whose plaintext is never kept:
revoking it, or disabling the user, ends the session exactly as for key logins.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from services.api.admin.service import add_member, create_user, find_user, member_role
from services.api.api_keys import issue_key
from services.api.settings import OidcGrant
from services.api.web.oidc.provider import SignInRefused
from services.common.models import ApiKey, Project, User

log = logging.getLogger(__name__)

SESSION_KEY_NAME = "web sign-in (SSO)"


def verified_email(claims: dict[str, Any]) -> str:
    email = claims.get("email")
    if not isinstance(email, str) or "@" not in email:
        raise SignInRefused("the sign-in provider sent no e-mail address")
    if claims.get("email_verified") is not True:
        raise SignInRefused(
            f"the e-mail address {email} is not verified at the sign-in provider; "
            "verify it there, then sign in again"
        )
    return email.strip().lower()


def role_values(claims: dict[str, Any], *, claim: str) -> list[str]:
    """The role claim as a list: a string is one value, anything else but strings none."""
    value = claims.get(claim)
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


def signed_in_user(
    db: Session, *, claims: dict[str, Any], role_claim: str, role_map: dict[str, OidcGrant]
) -> User:
    """The user these claims sign in as, created on first sign-in, with grants applied."""
    email = verified_email(claims)
    user = find_user(db, email=email)
    if user is None:
        user = create_user(db, email=email)
    if user.disabled:
        raise SignInRefused(f"the account {email} is disabled; ask an administrator")
    for value in role_values(claims, claim=role_claim):
        grant = role_map.get(value)
        if grant is not None:
            _apply(db, user=user, grant=grant, value=value)
    return user


def _apply(db: Session, *, user: User, grant: OidcGrant, value: str) -> None:
    if grant.admin:
        user.is_admin = True
    for name, role in grant.projects.items():
        project = db.scalar(select(Project).where(Project.name == name))
        if project is None:
            # A typo in the map must not create projects; the operator sees why.
            log.warning("SSO role %r names project %r, which does not exist", value, name)
            continue
        if member_role(db, project=project, user=user) != "owner":
            add_member(db, project=project, user=user, role=role)


def session_key(db: Session, *, user: User, ttl_s: int) -> ApiKey:
    """A key only this browser session names, expiring with it; its plaintext is dropped."""
    row, _ = issue_key(
        db,
        user=user,
        name=SESSION_KEY_NAME,
        expires_at=datetime.now(UTC) + timedelta(seconds=ttl_s),
    )
    return row
