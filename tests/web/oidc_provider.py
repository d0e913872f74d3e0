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
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

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

    def set_user(self, sub: str, **claims: Any) -> None:
        httpx.put(f"{self.url}/users/{sub}", json=claims, timeout=10).raise_for_status()

    def tamper(self, *, foreign_key: bool = False, **claims: Any) -> None:
        """The next ID token the token endpoint sends carries ``claims`` instead."""
        self._next.append(Tamper(claims=claims, foreign_key=foreign_key))

    def _rewrite(self, response: flask.Response) -> flask.Response:
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
    app.after_request(provider._rewrite)
    thread = threading.Thread(target=server.serve_forever, args=(0.1,), daemon=True)
    thread.start()
    try:
        yield provider
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
