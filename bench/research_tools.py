"""What the research tools cost beyond the network: the address guard per
request, and turning a page or a PDF into text.

Cases, in one run, against the recorded web on loopback (tests/fixtures/recorded_web.py):
  * guarded fetch  — ``net_guard.fetch`` of the recorded article (resolve,
                     check, connect to the checked address, peer check);
  * baseline       — a plain ``httpx.get`` of the same URL (a new client each
                     time, as the guard makes one per fetch);
  * web_fetch tool — guard + HTML → title and readable text;
  * html_to_text   — a ~1 MB generated article; baseline: selectolax's plain
                     ``body.text()`` of the same page (no cleaning, no structure);
  * pdf_text       — the 4-page paper the tests use (PyMuPDF in a limited child
                     process, page markers: mostly the child's start).

    .venv/bin/python -m bench.research_tools [--requests 200]

Prints one JSON line: p50/p95 in ms per case.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from selectolax.lexbor import LexborHTMLParser

from services.common.net_guard import NetGuard, fetch, parse_allow_list
from services.worker.tools.base import ToolContext
from services.worker.tools.web.html_text import html_to_text
from services.worker.tools.web.page import WebFetchArgs, WebFetchTool
from services.worker.tools.web.pdf import pdf_text
from services.worker.tools.web.settings import ResearchToolSettings
from tests.fixtures.recorded_web import PDF_PATH, RECORDED, serve_recorded_web


def timings(fn: Callable[[], Any], runs: int) -> dict[str, float]:
    fn()  # warm-up (imports, first connection)
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return {
        "p50_ms": round(statistics.median(samples), 3),
        "p95_ms": round(samples[min(len(samples) - 1, int(len(samples) * 0.95))], 3),
    }


def big_article() -> str:
    section = (RECORDED / "page_article.html").read_text()
    body = section.split("<article>", 1)[1].split("</article>", 1)[0]
    return (
        f"<html><head><title>Big</title></head><body><article>{body * 1400}</article></body></html>"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=200)
    opts = parser.parse_args()
    runs = opts.requests
    ctx = ToolContext(
        job_id="bench",
        session_id=None,
        user_id="bench",
        project_id=None,
        workspace=Path("."),
        tool_call_id="c",
        step_key="k",
        emit=lambda kind, payload: None,
    )
    figures: dict[str, Any] = {"requests": runs}
    with serve_recorded_web() as web:
        url = f"{web.base}/article.html"
        guard = NetGuard(parse_allow_list(web.allow_entry))
        figures["guarded_fetch"] = timings(
            lambda: fetch(url, guard=guard, max_bytes=1_000_000, timeout_s=5), runs
        )
        figures["baseline_plain_httpx"] = timings(
            lambda: httpx.get(url, timeout=5).raise_for_status(), runs
        )
        tool = WebFetchTool(ResearchToolSettings(web_allow=web.allow_entry))
        figures["web_fetch_tool"] = timings(lambda: tool.run(WebFetchArgs(url=url), ctx), runs)
    page = big_article()
    few = max(3, runs // 20)
    figures["page_bytes"] = len(page.encode())
    figures["html_to_text_1mb"] = timings(lambda: html_to_text(page), few)
    figures["baseline_selectolax_body_text_1mb"] = timings(
        lambda: LexborHTMLParser(page).body.text(),
        few,  # type: ignore[union-attr]
    )
    data = PDF_PATH.read_bytes()
    limits = ResearchToolSettings().pdf_text_limits()
    figures["pdf_text_4_pages"] = timings(lambda: pdf_text(data, limits), few)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
