"""pdf_fetch and a hostile PDF: a ~1 MB file whose page inflates to 300 MB of text
operators, served by a loopback server the test starts. The worker process reads
no PDF itself: the tool answers a clear error within its limit, this process's
memory does not grow, and no parse child is left running. A tool timeout kills
the attempt's parse child before a retry starts, so two never run side by side.
"""

from __future__ import annotations

import http.server
import os
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from services.common.pdf_child.runner import running_children
from services.worker.runtime.tool_attempts import run_attempts
from services.worker.tools.base import ToolContext, ToolError
from services.worker.tools.web.pdf import PdfFetchArgs, PdfFetchTool
from services.worker.tools.web.settings import ResearchToolSettings
from tests.fixtures.rss import peak_rss_growth
from tests.library import hostile_pdfs

CHILD_MODULE = b"services.common.pdf_child.child"


def parse_children() -> list[int]:
    """Pids of this process's PDF reader children, from /proc (not the runner's own list)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid() and CHILD_MODULE in cmdline:
            found.append(int(entry.name))
    return found


@pytest.fixture(scope="module")
def bomb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("bomb_web")
    hostile_pdfs.text_bomb_pdf(root / "bomb.pdf", 300)
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.RequestHandlerClass.log_message = lambda *a: None  # type: ignore[method-assign]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _settings(tmp_path: Path, allow: str, **overrides: object) -> ResearchToolSettings:
    values: dict[str, object] = {
        "web_allow": allow,
        "files_dir": tmp_path / "files",
        "web_fetch_timeout_s": 5.0,
        "pdf_child_memory_mb": 640,
        "pdf_text_timeout_s": 40.0,
        **overrides,
    }
    return ResearchToolSettings(**values)  # type: ignore[arg-type]


def test_a_pdf_bomb_fails_clearly_and_costs_the_worker_nothing(
    bomb_server: str, tmp_path: Path, ctx: ToolContext
) -> None:
    tool = PdfFetchTool(_settings(tmp_path, bomb_server), ingest=None)
    args = PdfFetchArgs(url=f"http://{bomb_server}/bomb.pdf")
    with peak_rss_growth() as growth, pytest.raises(ToolError) as caught:
        run_attempts(tool, args, ctx, attempts=3, base_s=0.01)
    err = caught.value
    assert err.code == "pdf_too_complex", err.to_dict()
    assert "exceeded the parser memory limit (640 MiB)" in err.message
    # A limit is final: retrying the same bomb would only hit it again.
    assert err.retryable is False and err.details["attempts"] == 1
    # In the worker, the parse took the process to the machine's memory (13 GB
    # seen); here it happens in the child, and this process holds only an answer.
    assert growth.grew_mb < 150, f"worker RSS grew {growth.grew_mb:.0f} MiB"
    assert running_children() == [] and parse_children() == []


class SlowReading(PdfFetchTool):
    timeout_s = 1.5  # well inside the bomb's parse (several seconds before its limit)


def test_a_tool_timeout_kills_the_parse_and_retries_never_overlap(
    bomb_server: str, tmp_path: Path, ctx: ToolContext
) -> None:
    tool = SlowReading(_settings(tmp_path, bomb_server, pdf_child_memory_mb=1536), ingest=None)
    args = PdfFetchArgs(url=f"http://{bomb_server}/bomb.pdf")
    seen: list[int] = []
    most_at_once = 0
    stop = threading.Event()

    def watch() -> None:
        nonlocal most_at_once
        while not stop.wait(0.02):
            pids = parse_children()
            seen.extend(p for p in pids if p not in seen)
            most_at_once = max(most_at_once, len(pids))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        with pytest.raises(ToolError) as caught:
            run_attempts(tool, args, ctx, attempts=2, base_s=0.01)
        left = parse_children()
    finally:
        stop.set()
        watcher.join()
    assert caught.value.code == "timeout" and caught.value.details["attempts"] == 2
    assert len(seen) == 2, seen  # each attempt parsed, in its own child
    assert most_at_once == 1, "a retry's parse ran beside the timed-out one"
    assert left == [], "a parse child outlived its timed-out call"
