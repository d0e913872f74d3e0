"""A real OpenID provider on loopback for the SSO tests: ``oidc-provider-mock``.

It is Authlib's own authorization server (discovery, /authorize with a form to
pick the user, the token endpoint, JWKS, RS256 ID tokens, one-use codes), run on
a thread of the test process. Users and their claims are set over its HTTP API
(``PUT /users/<sub>``).

The provider always issues correct ID tokens, so the token-level refusals
(another audience, expired, another nonce, a foreign signature) need a token it
would not make: :meth:`OidcProvider.tamper` rewrites the claims of the next ID
token its token endpoint sends, re-signed with *the provider's own key* (same
``kid``, still valid against its JWKS) — or, with ``foreign_key``, with a key
the provider never published. Everything else in that exchange stays the
provider's.

The package's authorization codes do not keep a PKCE challenge (it implements no
RFC 7636), so the harness adds the server's half of it, as a required check: the
``code_challenge`` (S256 only) of each authorization request is remembered for
the code it yields, and the token endpoint refuses that code (``invalid_grant``)
unless ``BASE64URL(SHA256(code_verifier))`` equals it.
"""

from __future__ import annotations

import base64
import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import flask
import httpx
import oidc_provider_mock
import werkzeug.serving
from joserfc import jwt
from joserfc.jwk import RSAKey


@dataclass
class Tamper:
    claims: dict[str, Any] = field(default_factory=dict)
    foreign_key: bool = False


@dataclass
class OidcProvider:
    url: str
    _next: list[Tamper] = field(default_factory=list)
    _challenges: dict[str, str] = field(default_factory=dict)
    # Codes redeemed with the verifier of their challenge.
    pkce_verified: list[str] = field(default_factory=list)

    def set_user(self, sub: str, **claims: Any) -> None:
        httpx.put(f"{self.url}/users/{sub}", json=claims, timeout=10).raise_for_status()

    def tamper(self, *, foreign_key: bool = False, **claims: Any) -> None:
        """The next ID token the token endpoint sends carries ``claims`` instead."""
        self._next.append(Tamper(claims=claims, foreign_key=foreign_key))

    def _remember_challenge(self, response: flask.Response) -> flask.Response:
        if flask.request.path != "/oauth2/authorize" or response.status_code != 302:
            return response
        code = parse_qs(urlsplit(response.headers["Location"]).query).get("code")
        if code and flask.request.args.get("code_challenge_method") == "S256":
            self._challenges[code[0]] = flask.request.args.get("code_challenge", "")
        return response

    def _check_verifier(self) -> flask.Response | None:
        if flask.request.path != "/oauth2/token" or flask.request.method != "POST":
            return None
        code = flask.request.form.get("code", "")
        verifier = flask.request.form.get("code_verifier", "")
        digest = hashlib.sha256(verifier.encode()).digest()
        if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != self._challenges.get(code):
            body = {"error": "invalid_grant", "error_description": "PKCE verification failed"}
            return flask.Response(flask.json.dumps(body), 400, mimetype="application/json")
        self.pkce_verified.append(code)
        return None

    def _rewrite(self, response: flask.Response) -> flask.Response:
        response = self._remember_challenge(response)
        if flask.request.path != "/oauth2/token" or not self._next or response.status_code != 200:
            return response
        change = self._next.pop(0)
        body = response.get_json()
        storage = flask.g.oidc_provider_mock_storage
        own = RSAKey.import_key(storage.jwk.as_dict(is_private=True))
        token = jwt.decode(body["id_token"], own)
        key = RSAKey.generate_key(2048) if change.foreign_key else own
        header = {"alg": "RS256", "kid": token.header.get("kid", own.kid)}
        body["id_token"] = jwt.encode(header, {**token.claims, **change.claims}, key)
        response.set_data(flask.json.dumps(body))
        return response


@contextmanager
def running_provider() -> Iterator[OidcProvider]:
    """The provider on 127.0.0.1 (its issuer is ``http://127.0.0.1:<port>``), nonce required."""
    app = oidc_provider_mock.app(require_nonce=True)
    server = werkzeug.serving.make_server("127.0.0.1", 0, app, threaded=True)
    provider = OidcProvider(url=f"http://127.0.0.1:{server.server_port}")
    app.before_request(provider._check_verifier)
    app.after_request(provider._rewrite)
    thread = threading.Thread(target=server.serve_forever, args=(0.1,), daemon=True)
    thread.start()
    try:
        yield provider
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
