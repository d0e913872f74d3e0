"""Who may drive the simulator: ``/_sim/*`` asks for the stack's internal token.

The control API lists every conversation (``/_sim/stats``), returns what each
user's agent sent (``/_sim/requests``) and scripts any conversation's next
reply (``PUT /_sim/scripts/…``, which can make another user's agent call any
tool). When the simulator serves a stack (``leaflab up`` passes
``LEAFLAB_SIM_CONTROL_TOKEN``: the stack's internal token), those routes need
``X-Leaflab-Internal: <token>``, the header the library's internal routes use.
The OpenAI-compatible routes (``/v1/...``) and ``/healthz`` stay open: they
are what the stack's workers call. Without a token (a developer's own
simulator, the test fixtures) the control API is open as before.
"""

from __future__ import annotations

import hmac

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from services.model_sim import openai_format as fmt

CONTROL_PREFIX = "_sim"
TOKEN_HEADER = b"x-leaflab-internal"


def is_control_path(path: str) -> bool:
    # Leading slashes collapsed, so "//_sim/stats" cannot slip past (it would 404 anyway).
    return path.lstrip("/").split("/", 1)[0] == CONTROL_PREFIX


class ControlGuard:
    """ASGI middleware: a control request without the token is answered 401 here."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and is_control_path(str(scope["path"])):
            presented = dict(scope.get("headers") or []).get(TOKEN_HEADER, b"")
            if not hmac.compare_digest(presented, self.token):
                body = fmt.error_body(
                    401, "the simulator's control API needs X-Leaflab-Internal: <internal token>"
                )
                await JSONResponse(body, status_code=401)(scope, receive, send)
                return
        await self.app(scope, receive, send)
