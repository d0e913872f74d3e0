"""The CLI's HTTP client: LEAFLAB_URL + LEAFLAB_API_KEY (or $LEAFLAB_HOME/admin.key).

Every client command imports this module to define itself, so it imports httpx
and the settings module (pydantic) only once a request is made: `leaflab jobs
--help` answers without them (tests/cli/test_startup_imports.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    import httpx


def api_url() -> str:
    return os.environ.get("LEAFLAB_URL", "http://127.0.0.1:8000").rstrip("/")


def api_key() -> str:
    key = os.environ.get("LEAFLAB_API_KEY")
    if key:
        return key.strip()
    from services.common.settings import default_home

    home = Path(os.environ.get("LEAFLAB_HOME") or default_home())
    path = home / "admin.key"
    if path.exists():
        return path.read_text().strip()
    raise click.ClickException(
        f"no API key: set LEAFLAB_API_KEY or run `leaflab up` (it writes {path})"
    )


class LeaflabClient:
    def __init__(self, base_url: str | None = None, key: str | None = None) -> None:
        import httpx

        self.base_url = base_url or api_url()
        self._http = httpx.Client(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {key or api_key()}"},
            timeout=httpx.Timeout(30.0, read=60.0),
        )

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        import httpx

        try:
            return self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise click.ClickException(f"cannot reach Leaflab at {self.base_url}: {exc}") from None

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        resp = self._send(method, path, **kwargs)
        if resp.status_code >= 400:
            try:
                err = resp.json()["error"]
                message = f"{err['code']}: {err['message']}"
            except (ValueError, KeyError, TypeError):
                message = resp.text[:500]
            raise click.ClickException(f"HTTP {resp.status_code} {message}")
        if resp.status_code == 204 or not resp.content:
            return None
        return resp.json()

    def content(self, path: str) -> bytes:
        """The body of a GET (an artifact's bytes), or a ClickException saying why not."""
        resp = self._send("GET", path)
        if resp.status_code >= 400:
            raise click.ClickException(f"HTTP {resp.status_code} for {path}")
        return resp.content

    def absolute(self, path: str) -> str:
        """``path`` (an API path like ``/v1/jobs/…``) as a URL a browser can open."""
        import httpx

        return str(httpx.URL(self.base_url).join(path))

    def events(self, job_id: str, last_event_id: str | None = None) -> Iterator[dict[str, Any]]:
        """Yield SSE events of a job until its final event."""
        import httpx

        headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
        timeout = httpx.Timeout(30.0, read=None)
        with self._http.stream(
            "GET", f"/v1/jobs/{job_id}/events", headers=headers, timeout=timeout
        ) as resp:
            if resp.status_code >= 400:
                resp.read()
                raise click.ClickException(f"HTTP {resp.status_code} {resp.text[:300]}")
            yield from parse_sse(resp.iter_lines())


def parse_sse(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    event: dict[str, Any] = {}
    for line in lines:
        if not line:
            if "data" in event:
                event["data"] = json.loads(event["data"])
                yield event
            event = {}
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(":")
            event[field] = value.lstrip(" ")
