"""Follow uploaded documents to `ready`/`failed`: a rich progress bar (pages,
pages/s, ETA) on a terminal, one plain line per finished document otherwise.

Page totals are counted locally (PyMuPDF's page count, cheap) so the bar and
the ETA mean something before the server has parsed anything; the server's own
page count replaces the local one when a document is ready.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import httpx
from rich.console import Console

from services.cli.term.literal import literal

TERMINAL = ("ready", "failed", "metadata_only")


@dataclass
class Upload:
    path: Path
    id: str
    pages: int  # local count; 0 when unreadable here (the server decides)
    status: str = "queued"
    document: dict[str, Any] | None = None  # the server's last answer (for --json)


def local_pages(path: Path) -> int:
    """PyMuPDF's page count, in this process on purpose: the file is the local
    user's own, only its cross-reference table is read (no page is interpreted),
    and it is counted only after the server's limited upload check accepted it
    (services/common/pdf_child), so a file that passes the server's memory cap
    costs the user's own process at most that much, once."""
    try:
        import pymupdf

        with pymupdf.open(path) as doc:
            return int(doc.page_count)
    except Exception:  # the server reports why; the bar just counts it as 0 pages
        return 0


def _poll(client: httpx.Client, url: str, headers: dict[str, str], up: Upload) -> dict[str, object]:
    resp = client.get(f"{url}/v1/library/documents/{up.id}", headers=headers)
    if resp.status_code != 200:
        return {"status": up.status}
    body: dict[str, object] = resp.json()
    return body


def _line(up: Upload, body: dict[str, object], pages_done: int, total: int, started: float) -> str:
    elapsed = max(time.monotonic() - started, 1e-6)
    rate = pages_done / elapsed
    eta = (total - pages_done) / rate if rate > 0 else float("inf")
    what = f"ready ({body.get('pages')} pages, {body.get('chunks')} chunks)"
    if body["status"] == "failed":
        what = f"failed: {literal(body.get('error'))}"
    eta_text = f"{eta:.0f}s" if eta != float("inf") else "?"
    done = f"{pages_done}/{total} pages, {rate:.1f} pages/s, ETA {eta_text}"
    return f"{literal(up.path)}: {what} | {done}"


def follow(
    client: httpx.Client,
    url: str,
    headers: dict[str, str],
    uploads: list[Upload],
    *,
    interactive: bool,
    poll_s: float = 1.0,
    timeout_s: float | None = None,
    console: Console | None = None,
    quiet: bool = False,
) -> int:
    """Wait until every upload is ready or failed; returns how many failed.

    ``interactive`` draws the bar on ``console``; otherwise one line per finished
    document, or nothing when ``quiet`` (``--json`` prints the documents after)."""
    total = sum(u.pages for u in uploads)
    started = time.monotonic()
    pending = [u for u in uploads if u.status not in TERMINAL]
    # Duplicates of finished documents count as done from the start.
    pages_done = sum(u.pages for u in uploads if u not in pending)
    failed = 0
    progress = None
    task = None
    if interactive:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        progress = Progress(
            TextColumn("[bold]pages"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]} pages/s"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[docs]}"),
            console=console,
        )
        task = progress.add_task("ingest", total=total or None, rate="0.0", docs="")
        progress.start()
    try:
        while True:  # once at least, so the bar also shows documents that were done already
            if timeout_s is not None and time.monotonic() - started > timeout_s:
                raise click.ClickException(f"{len(pending)} document(s) still in progress")
            for up in list(pending):
                body = _poll(client, url, headers, up)
                up.status = str(body["status"])
                up.document = body
                if up.status not in TERMINAL:
                    continue
                pending.remove(up)
                failed += up.status == "failed"
                pages_done += up.pages
                if progress is None and not quiet:
                    click.echo(_line(up, body, pages_done, total, started))
            if progress is not None and task is not None:
                rate = pages_done / max(time.monotonic() - started, 1e-6)
                docs = f"{len(uploads) - len(pending)}/{len(uploads)} documents"
                progress.update(task, completed=pages_done, rate=f"{rate:.1f}", docs=docs)
            if not pending:
                break
            time.sleep(poll_s)
    finally:
        if progress is not None:
            progress.stop()
    return failed
