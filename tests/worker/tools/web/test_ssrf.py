"""The SSRF table through the agent's own tools: every bypass form, aimed at a
listening canary on loopback (its port is never in LEAFLAB_WEB_ALLOW), is
refused with a structured error, and the canary receives no connection at all.

Proven able to fail: with the guard's check disabled (``NetGuard.resolve``
returning the addresses unchecked), these tests go red with canary hits.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from services.worker.tools.base import ToolContext, ToolError
from services.worker.tools.web.page import WebFetchArgs, WebFetchTool
from services.worker.tools.web.pdf import PdfFetchArgs, PdfFetchTool
from services.worker.tools.web.search import WebSearchArgs, WebSearchTool
from services.worker.tools.web.settings import ResearchToolSettings
from tests.fixtures.hostile_urls import MALFORMED_URLS
from tests.fixtures.recorded_web import Canary, RecordedWeb
from tests.worker.tools.web.conftest import settings_for

REFUSED_CODES = {"url_refused", "invalid_url"}


def bypass_forms(port: int, allowed: str) -> list[str]:
    """Ways to spell "this machine" (or metadata) that a naive check lets through."""
    return [
        f"http://127.0.0.1:{port}/",
        f"http://2130706433:{port}/",  # decimal
        f"http://017700000001:{port}/",  # octal, whole
        f"http://0177.0.0.1:{port}/",  # octal, dotted
        f"http://0x7f000001:{port}/",  # hex, whole
        f"http://0x7f.1:{port}/",  # hex, short form
        f"http://0x7f.0.0.1:{port}/",
        f"http://127.1:{port}/",  # short form
        f"http://127.0.1:{port}/",
        f"http://0:{port}/",
        f"http://0.0.0.0:{port}/",
        f"http://[::]:{port}/",
        f"http://[::1]:{port}/",
        f"http://[0:0:0:0:0:0:0:1]:{port}/",
        f"http://[::ffff:127.0.0.1]:{port}/",  # IPv4-mapped
        f"http://[::ffff:7f00:1]:{port}/",
        f"http://[::127.0.0.1]:{port}/",  # IPv4-compatible
        f"http://[64:ff9b::127.0.0.1]:{port}/",  # NAT64
        f"http://[2002:7f00:1::1]:{port}/",  # 6to4
        f"http://[::1%25lo]:{port}/",  # zone id
        f"http://localhost:{port}/",  # a DNS name resolving to loopback
        f"http://LOCALHOST:{port}/",
        f"http://localhost.:{port}/",  # trailing dot
        f"http://{allowed}@127.0.0.1:{port}/",  # userinfo naming the allowed host
        f"http://user:pw@localhost:{port}/",
        f"http://127.0.0.1:{port}#@{allowed}/",  # fragment trick
        f"http://{allowed}\\@127.0.0.1:{port}/",  # backslash trick
        f"https://127.0.0.1:{port}/",
        f"http://10.0.0.1:{port}/",  # private
        f"http://192.168.1.1:{port}/",
        f"http://172.16.0.1:{port}/",
        f"http://100.64.0.1:{port}/",  # CGNAT
        f"http://169.254.1.1:{port}/",  # link-local
        f"http://[fe80::1]:{port}/",
        f"http://169.254.169.254:{port}/latest/meta-data/",  # metadata
        f"http://[fd00:ec2::254]:{port}/",
        f"http://[::ffff:169.254.169.254]:{port}/",
        f"http://metadata.google.internal:{port}/computeMetadata/v1/",
        f"http://metadata.google.internal.:{port}/",
        f"http://100.100.100.200:{port}/",
    ]


def _refused(run: Any) -> str:
    with pytest.raises(ToolError) as caught:
        run()
    assert caught.value.code in REFUSED_CODES, caught.value.to_dict()
    assert not caught.value.retryable
    return caught.value.code


@pytest.fixture
def guarded(recorded_web: RecordedWeb, tmp_path: Path) -> ResearchToolSettings:
    # Only the recorded web is exempt; the canary's port is not.
    return settings_for(recorded_web, tmp_path)


def test_every_bypass_form_is_refused_and_the_canary_hears_nothing(
    guarded: ResearchToolSettings, recorded_web: RecordedWeb, canary: Canary, ctx: ToolContext
) -> None:
    forms = bypass_forms(canary.port, recorded_web.allow_entry)
    # Every form aims at the canary's port, so its silence means the guard held.
    assert all(f":{canary.port}" in url for url in forms)
    page, pdf = WebFetchTool(guarded), PdfFetchTool(guarded, ingest=None)
    for url in forms:
        _refused(lambda url=url: page.run(WebFetchArgs(url=url), ctx))
        _refused(lambda url=url: pdf.run(PdfFetchArgs(url=url), ctx))
    assert canary.hits == []


def test_redirects_from_an_allowed_server_to_the_canary_are_refused(
    guarded: ResearchToolSettings, recorded_web: RecordedWeb, canary: Canary, ctx: ToolContext
) -> None:
    tool = WebFetchTool(guarded)
    # The allowed server itself answers, so the refusals below are the guard's.
    assert tool.run(WebFetchArgs(url=f"{recorded_web.base}/article.html"), ctx).data["title"]
    base = recorded_web.base
    for target in (
        f"http://127.0.0.1:{canary.port}/",
        f"http://localhost:{canary.port}/",
        f"http://[::1]:{canary.port}/",
        f"http://2130706433:{canary.port}/",
        f"//127.0.0.1:{canary.port}/",
        f"http://169.254.169.254:{canary.port}/",
    ):
        _refused(lambda t=target: tool.run(WebFetchArgs(url=f"{base}/redirect?to={t}"), ctx))
    # A chain: allowed → allowed → canary.
    inner = f"{base}/redirect?to=http://127.0.0.1:{canary.port}/secret"
    _refused(lambda: tool.run(WebFetchArgs(url=f"{base}/redirect?to={inner}"), ctx))
    assert recorded_web.hits["/redirect"] == 8
    assert canary.hits == []


def test_a_search_api_aimed_at_the_canary_is_refused(
    recorded_web: RecordedWeb, tmp_path: Path, canary: Canary, ctx: ToolContext
) -> None:
    settings = settings_for(recorded_web, tmp_path, brave_base_url=f"http://127.1:{canary.port}")
    _refused(lambda: WebSearchTool(settings).run(WebSearchArgs(query="x"), ctx))
    settings = settings_for(
        recorded_web, tmp_path, brave_base_url=f"http://localhost:{canary.port}"
    )
    _refused(lambda: WebSearchTool(settings).run(WebSearchArgs(query="x"), ctx))
    assert canary.hits == []


def test_dns_rebinding_connects_only_to_the_address_that_was_checked(
    guarded: ResearchToolSettings,
    canary: Canary,
    ctx: ToolContext,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A name answering a public address first and loopback afterwards: the
    address checked is the one connected to, so loopback is never reached."""
    real = socket.getaddrinfo
    asked: list[str] = []

    def rebinding(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host != "rebind.test":
            return real(host, port, *args, **kwargs)
        asked.append(host)
        # First answer public, every later one loopback.
        address = "8.8.8.8" if len(asked) == 1 else "127.0.0.1"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    tool = WebFetchTool(guarded.model_copy(update={"web_fetch_timeout_s": 1.0}))
    with pytest.raises(ToolError) as caught:
        tool.run(WebFetchArgs(url=f"http://rebind.test:{canary.port}/"), ctx)
    # Only a network failure toward the checked public address, no second lookup.
    assert caught.value.code in {"unreachable", "timeout"}, caught.value.to_dict()
    assert asked == ["rebind.test"]
    assert canary.hits == []


def test_the_allow_list_opens_only_the_listed_port(
    recorded_web: RecordedWeb, tmp_path: Path, canary: Canary, ctx: ToolContext
) -> None:
    near = settings_for(recorded_web, tmp_path, web_allow=f"127.0.0.1:{canary.port + 1}")
    _refused(
        lambda: WebFetchTool(near).run(WebFetchArgs(url=f"http://127.0.0.1:{canary.port}/"), ctx)
    )
    assert canary.hits == []
    # Listed, it is let through: the canary answers, which shows the path works.
    listed = settings_for(recorded_web, tmp_path, web_allow=f"127.0.0.1:{canary.port}")
    result = WebFetchTool(listed).run(WebFetchArgs(url=f"http://127.0.0.1:{canary.port}/"), ctx)
    assert "canary" in result.content and canary.hits == ["127.0.0.1"]


def _tool_argument(url: str) -> bool:
    """Arguments over 2,000 characters or not UTF-8 are refused by argument validation."""
    return len(url) <= 2000 and not any(0xD800 <= ord(c) <= 0xDFFF for c in url)


@pytest.mark.parametrize("url", [u for u in MALFORMED_URLS if _tool_argument(u)])
def test_a_malformed_url_is_invalid_url_not_a_crash(
    guarded: ResearchToolSettings, ctx: ToolContext, url: str
) -> None:
    """``http://[zz]/``, a port out of range, IDNA garbage…: the model gets
    ``invalid_url`` (a validation error it can fix), never ``tool_crashed``."""
    page, pdf = WebFetchTool(guarded), PdfFetchTool(guarded, ingest=None)
    for run in (
        lambda: page.run(WebFetchArgs(url=url), ctx),
        lambda: pdf.run(PdfFetchArgs(url=url), ctx),
    ):
        with pytest.raises(ToolError) as caught:
            run()
        assert (caught.value.code, caught.value.category) == ("invalid_url", "validation")
        assert not caught.value.retryable
