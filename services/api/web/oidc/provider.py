"""Talking to the OpenID provider: discovery, the code exchange and the ID token's checks.

Authlib builds the authorization request (PKCE S256, state, nonce) and performs the
code exchange; joserfc checks the ID token's signature against the issuer's JWKS.
:func:`verified_claims` then holds the token to OpenID Connect Core §3.1.3.7: the
issuer is the configured one, the audience names this client (and ``azp`` does when
there are several), it has not expired, and its nonce is the one this sign-in sent.
Any failure is a :class:`SignInRefused` whose message the error page shows.

Discovery and JWKS are fetched for each sign-in (two small GETs; a rotated key is
picked up at once). The issuer is the operator's setting, not a user's URL, so these
fetches do not go through the SSRF guard.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
from authlib.integrations.base_client.errors import OAuthError
from authlib.integrations.httpx_client import OAuth2Client
from authlib.oidc.core import CodeIDToken
from joserfc import jwt
from joserfc.errors import ExpiredTokenError, JoseError
from joserfc.jwk import KeySet
from joserfc.jws import JWSRegistry

from services.api.settings import ApiSettings

SCOPES = "openid email profile"
# Clock skew allowed between the provider and this host on exp/iat.
LEEWAY_S = 60


class SignInRefused(Exception):
    """The sign-in cannot finish; the message says why (shown on the error page)."""


@dataclass(frozen=True)
class ProviderMetadata:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    algorithms: list[str]


def discover(settings: ApiSettings) -> ProviderMetadata:
    """The issuer's ``/.well-known/openid-configuration``, whose ``issuer`` must be ours."""
    issuer = (settings.oidc_issuer or "").rstrip("/")
    url = f"{issuer}/.well-known/openid-configuration"
    try:
        response = httpx.get(url, timeout=settings.oidc_timeout_s)
        response.raise_for_status()
        doc = response.json()
        metadata = ProviderMetadata(
            issuer=doc["issuer"],
            authorization_endpoint=doc["authorization_endpoint"],
            token_endpoint=doc["token_endpoint"],
            jwks_uri=doc["jwks_uri"],
            # Never "none": an unsigned token proves nothing.
            algorithms=[
                alg
                for alg in doc.get("id_token_signing_alg_values_supported") or ["RS256"]
                if alg != "none"
            ],
        )
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as failed:
        raise SignInRefused(f"the sign-in provider could not be reached ({failed})") from None
    # OpenID Connect Discovery §4.3: a document naming another issuer is not this one's.
    if metadata.issuer.rstrip("/") != issuer:
        raise SignInRefused("the sign-in provider's discovery names another issuer")
    return metadata


def _client(settings: ApiSettings, *, redirect_uri: str) -> OAuth2Client:
    secret = settings.oidc_client_secret.get_secret_value() if settings.oidc_client_secret else None
    return OAuth2Client(
        client_id=settings.oidc_client_id,
        client_secret=secret,
        scope=SCOPES,
        redirect_uri=redirect_uri,
        code_challenge_method="S256",
        token_endpoint_auth_method="client_secret_basic" if secret else "none",
        timeout=settings.oidc_timeout_s,
    )


def authorization_url(
    settings: ApiSettings,
    metadata: ProviderMetadata,
    *,
    redirect_uri: str,
    state: str,
    nonce: str,
    code_verifier: str,
) -> str:
    """Where the browser goes to sign in: code flow, S256 challenge of ``code_verifier``."""
    with _client(settings, redirect_uri=redirect_uri) as client:
        url, _ = client.create_authorization_url(
            metadata.authorization_endpoint, state=state, nonce=nonce, code_verifier=code_verifier
        )
    return str(url)


def exchange_code(
    settings: ApiSettings,
    metadata: ProviderMetadata,
    *,
    code: str,
    redirect_uri: str,
    code_verifier: str,
) -> dict[str, Any]:
    """The token response for ``code``; a used, expired or foreign code is refused."""
    with _client(settings, redirect_uri=redirect_uri) as client:
        try:
            token = client.fetch_token(
                metadata.token_endpoint, code=code, code_verifier=code_verifier
            )
        except OAuthError as refused:
            raise SignInRefused(
                f"the sign-in provider refused the code ({refused.error})"
            ) from None
        except httpx.HTTPError as failed:
            raise SignInRefused(f"the sign-in provider could not be reached ({failed})") from None
    if not isinstance(token, dict) or not token.get("id_token"):
        raise SignInRefused("the sign-in provider sent no ID token")
    return dict(token)


def verified_claims(
    settings: ApiSettings, metadata: ProviderMetadata, *, token: dict[str, Any], nonce: str
) -> dict[str, Any]:
    """The ID token's claims once its signature, issuer, audience, expiry and nonce hold."""
    try:
        jwks = httpx.get(metadata.jwks_uri, timeout=settings.oidc_timeout_s)
        jwks.raise_for_status()
        keys = KeySet.import_key_set(jwks.json())
    except (httpx.HTTPError, ValueError, JoseError) as failed:
        raise SignInRefused(f"the sign-in provider's keys could not be read ({failed})") from None
    try:
        decoded = jwt.decode(
            token["id_token"], keys, registry=JWSRegistry(algorithms=metadata.algorithms)
        )
        claims = CodeIDToken(
            decoded.claims,
            decoded.header,
            {"iss": {"essential": True, "value": metadata.issuer}},
            {"nonce": nonce, "access_token": token.get("access_token")},
        )
        claims.validate(leeway=LEEWAY_S)
    except ExpiredTokenError:
        raise SignInRefused("the sign-in has expired; please sign in again") from None
    except JoseError as bad:
        raise SignInRefused(f"the ID token was refused ({bad.error}: {bad.description})") from None
    if not audience_ok(dict(claims), client_id=settings.oidc_client_id or ""):
        raise SignInRefused("the ID token was issued to another application")
    return dict(claims)


def audience_ok(claims: dict[str, Any], *, client_id: str) -> bool:
    """``aud`` names this client; with several audiences, ``azp`` must be this client."""
    aud = claims.get("aud")
    audiences = aud if isinstance(aud, list) else [aud]
    if client_id not in audiences:
        return False
    azp = claims.get("azp")
    return azp == client_id if len(audiences) > 1 or azp is not None else True
