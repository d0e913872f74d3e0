"""Request body size caps, enforced while the body arrives, never after reading it all.

One cap for every route (``max_bytes``), and a small table of exceptions for
routes that legitimately take more, or (``None``) that stream the body to
disk and enforce their own cap as it arrives (the PDF upload). A body that declares a
``Content-Length`` over its cap is refused before a byte is read; a chunked
body (no ``Content-Length``) is counted as it streams in, and the moment it
passes the cap the client gets the same 413. The application then sees a
disconnected client and whatever it answers is dropped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services.common.contracts.errors import error_body

RouteKey = tuple[str, str]  # (method, exact path)


class BodySizeLimit:
    def __init__(
        self, app: ASGIApp, *, max_bytes: int, caps: Mapping[RouteKey, int | None] | None = None
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.caps = dict(caps or {})

    def cap_for(self, scope: Scope) -> int | None:
        key = (str(scope.get("method", "")).upper(), str(scope.get("path", "")).rstrip("/"))
        return self.caps.get(key, self.max_bytes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        cap = self.cap_for(scope) if scope["type"] == "http" else None
        if cap is None:
            # Not HTTP, or a route that streams its body to disk under its own cap.
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > cap:
            await _reject(send, cap)
            return
        seen = 0
        refused = False
        started = False

        async def counting_receive() -> Message:
            nonlocal seen, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > cap:
                    refused = True
                    if not started:
                        await _reject(send, cap)
                    # To the app the client is gone: it stops reading and its
                    # own answer (dropped below) never reaches the wire.
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if refused:
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, guarded_send)
        except Exception:
            if not refused:
                raise
            # The app failed because its body was cut off: the 413 already went out.


async def _reject(send: Send, limit: int) -> None:
    body = json.dumps(error_body("too_large", f"request body exceeds {limit} bytes")).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
