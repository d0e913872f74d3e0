"""Headers on every web page: a strict Content-Security-Policy (no inline script, no
third-party origin: the deployment may be offline and XSS gets no foothold), no framing,
no MIME sniffing, no referrer leaking job ids to other sites."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; connect-src 'self'; font-src 'self'; object-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
HEADERS = {
    b"content-security-policy": CSP.encode(),
    b"x-content-type-options": b"nosniff",
    b"x-frame-options": b"DENY",
    b"referrer-policy": b"same-origin",
}


class WebSecurityHeaders:
    """Adds the headers to HTML responses (pages), leaving the JSON API untouched."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                ctype = next((v for k, v in headers if k.lower() == b"content-type"), b"")
                if ctype.startswith(b"text/html") or scope["path"].startswith("/static/"):
                    present = {k.lower() for k, _ in headers}
                    headers += [(k, v) for k, v in HEADERS.items() if k not in present]
                    message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)
