"""First contentful paint and bytes transferred of the chat page and of a job page whose
trace holds 500 spans, in headless Chromium; baseline in the same run: /login, a static
page served by the same API.

    PYTHONPATH=$PWD .venv/bin/python -m bench.web_paint [--runs 5]

The 500 spans are inserted into the traces table the way the telemetry exporter stores
them (one SpanRecord row each), nested five deep under one root.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Page, sync_playwright

from bench.scratch_stack import scratch_stack
from services.common.db import build_engine, build_sessionmaker
from services.common.models import Job, SpanRecord
from tests.fixtures.builders import make_user
from tests.fixtures.processes import Services
from tests.web.browser import chromium_path, launch, login

SPANS = 500
# Chromium's own figures, read after the page settles.
MEASURE = """() => {
  const fcp = performance.getEntriesByName('first-contentful-paint')[0];
  const nav = performance.getEntriesByType('navigation')[0];
  const res = performance.getEntriesByType('resource');
  const bytes = [nav, ...res].reduce((a, e) => a + (e.transferSize || 0), 0);
  return {fcp: fcp ? fcp.startTime : null, bytes, requests: res.length + 1};
}"""


def insert_spans(factory: Any, trace_id: str) -> None:
    t0 = datetime.now(UTC)
    rows: list[SpanRecord] = []
    parents: list[str | None] = [None]
    for i in range(SPANS):
        span_id = uuid.uuid4().hex[:16]
        start = t0 + timedelta(milliseconds=i * 7)
        rows.append(
            SpanRecord(
                span_id=span_id,
                trace_id=trace_id,
                parent_span_id=parents[min(i % 5, len(parents) - 1)],
                name=f"span {i} {'chat leaflab-sim' if i % 3 else 'execute_tool python'}",
                kind="internal",
                service="leaflab-worker",
                start_time=start,
                end_time=start + timedelta(milliseconds=5 + i % 40),
                status_code="OK",
                status_message=None,
                attributes={"leaflab.i": i, "gen_ai.request.model": "leaflab-sim"},
                events=[],
            )
        )
        if len(parents) < 6:
            parents.append(span_id)
    with factory() as db, db.begin():
        db.add_all(rows)


def measure(page: Page, url: str, ready: str) -> dict[str, Any]:
    page.goto(url)
    page.wait_for_selector(ready, timeout=60_000)
    page.wait_for_load_state("networkidle")
    return dict(page.evaluate(MEASURE))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    os.environ.setdefault("LEAFLAB_HOME", tempfile.mkdtemp(prefix="leaflab-bench-"))
    executable = chromium_path()
    assert executable, "chromium is missing (scripts/ensure_browser.sh)"
    with scratch_stack("webpaint") as stack:
        factory = build_sessionmaker(build_engine(stack.database_url))
        svc = Services(stack, Path(tempfile.mkdtemp(prefix="webpaint-")))  # type: ignore[arg-type]
        try:
            url = svc.api()
            user = make_user(factory)
            with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {user.key}"}) as c:
                session = c.post("/v1/sessions", json={"title": "bench"}).json()
                job_id = c.post(
                    f"/v1/sessions/{session['id']}/messages", json={"content": "hi"}
                ).json()["job_id"]
            with factory() as db:
                job = db.get(Job, uuid.UUID(job_id))
                assert job is not None and job.trace_id
                trace_id = job.trace_id
            insert_spans(factory, trace_id)
            pages = {
                "/login (static baseline)": ("/login", "#api_key"),
                "chat /": (f"/?session={session['id']}", "[data-testid=message-user]"),
                f"job page, {SPANS}-span trace": (
                    f"/jobs/{job_id}",
                    f"[data-testid=span-row] >> nth={SPANS - 1}",
                ),
            }
            figures: dict[str, list[dict[str, Any]]] = {name: [] for name in pages}
            with sync_playwright() as pw:
                browser = launch(pw, executable)
                for _ in range(args.runs):
                    for name, (path, ready) in pages.items():
                        ctx = browser.new_context(viewport={"width": 1366, "height": 800})
                        page = ctx.new_page() if path == "/login" else login(ctx, url, user.key)
                        figures[name].append(measure(page, url + path, ready))
                        ctx.close()
                browser.close()
        finally:
            svc.stop()
    print(f"{'page':32} {'FCP median ms':>14} {'FCP min ms':>11} {'bytes':>9} {'requests':>9}")
    for name, runs in figures.items():
        fcps = [r["fcp"] for r in runs if r["fcp"] is not None]
        print(
            f"{name:32} {statistics.median(fcps):14.0f} {min(fcps):11.0f} "
            f"{runs[-1]['bytes']:9d} {runs[-1]['requests']:9d}"
        )


if __name__ == "__main__":
    main()
