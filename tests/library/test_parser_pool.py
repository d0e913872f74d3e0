"""The parser pool: long-lived limited processes, replaced after a crash, retried
once, recycled after N documents; hostile PDFs fail with reasons and the pool
keeps serving.

Real processes and real signals: the test SIGKILLs the pool's child by pid.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymupdf
import pytest

from services.library.chunking import chunk_blocks
from services.library.parsing.pdf_structure import parse_pdf
from services.library.parsing.pool import ParseFailed, ParseLimits, ParserPool
from tests.library import hostile_pdfs
from tests.library.conftest import PDF_DIR


def slow_pdf(path: Path, pages: int = 1000) -> Path:
    """Dense pages (copies of one), ~5-10 s to parse here: time to kill it midway."""
    doc = pymupdf.open()
    page = doc.new_page()
    for line in range(45):
        text = f"line {line} quasi-convex energy estimates decay on compact manifolds"
        page.insert_text((50, 60 + line * 16), text, fontsize=9)
    for _ in range(pages - 1):
        doc.fullcopy_page(0)
    doc.save(path)
    return path


def _cpu_seconds(pid: int | None) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.fixture
def pool() -> Iterator[ParserPool]:
    p = ParserPool(ParseLimits(memory_mb=768, timeout_s=60, max_pages=1000, pool_size=1))
    yield p
    p.close()


def _parse_in_thread(pool: ParserPool, path: Path) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["result"] = pool.parse(path)
        except ParseFailed as exc:
            out["error"] = str(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


def _kill_busy(pool: ParserPool, *, not_pid: int | None = None, timeout_s: float = 60) -> int:
    """SIGKILL the process parsing now (waiting until one other than ``not_pid`` is busy)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        pids = [p for p in pool.busy_pids() if p != not_pid]
        if pids:
            time.sleep(0.3)  # well inside the document, not at its first byte
            os.kill(pids[0], signal.SIGKILL)
            return pids[0]
        time.sleep(0.02)
    raise AssertionError("no parser process became busy")


class TestSharedPapers:
    def test_pool_gives_the_same_parse_as_in_process(self, pool: ParserPool) -> None:
        papers = sorted(PDF_DIR.glob("*.pdf"))
        assert len(papers) >= 10
        for paper in papers:
            pooled = pool.parse(paper)
            assert pooled == parse_pdf(str(paper), max_pages=1000), paper.name
            chunks = chunk_blocks(pooled["blocks"], paper=pooled["title"], max_tokens=220)
            assert chunks, paper.name
            for chunk in chunks:
                assert chunk.locator.startswith(pooled["title"])
                assert chunk.locator.endswith(f"p. {chunk.page}")
        # One process served every paper: no interpreter start per document.
        assert pool.started == 1


class TestCrashes:
    def test_killed_mid_document_is_replaced_and_retried_once(
        self, pool: ParserPool, tmp_path: Path
    ) -> None:
        path = slow_pdf(tmp_path / "slow.pdf")
        pool.parse(PDF_DIR / "test-uu.pdf")  # a warm process, as in service
        thread, out = _parse_in_thread(pool, path)
        killed = _kill_busy(pool)
        thread.join(120)
        assert "error" not in out, out.get("error")
        assert out["result"]["pages"] == 1000
        assert pool.started == 2  # the killed process was replaced
        assert killed not in pool.busy_pids()
        # The replacement keeps serving.
        assert pool.parse(PDF_DIR / "test-uu.pdf")["pages"] == 1

    def test_killed_twice_fails_with_a_reason(self, pool: ParserPool, tmp_path: Path) -> None:
        path = slow_pdf(tmp_path / "slow.pdf")
        thread, out = _parse_in_thread(pool, path)
        first = _kill_busy(pool)
        _kill_busy(pool, not_pid=first)
        thread.join(120)
        assert "result" not in out
        assert "killed" in out["error"] and "died on 2 attempts" in out["error"], out["error"]
        assert pool.parse(PDF_DIR / "test-uu.pdf")["pages"] == 1
        assert pool.started == 3

    def test_recycled_after_n_documents(self) -> None:
        pool = ParserPool(ParseLimits(pool_size=1, docs_per_process=2))
        try:
            for _ in range(5):
                pool.parse(PDF_DIR / "test-uu.pdf")
            assert pool.started == 3  # documents 1-2, 3-4, 5
        finally:
            pool.close()

    def test_recycled_once_its_memory_passes_the_mark(self) -> None:
        # Every parser holds more than 1 MiB after a document: each is replaced.
        pool = ParserPool(ParseLimits(pool_size=1, recycle_rss_mb=1))
        try:
            pids = set()
            for _ in range(3):
                pool.parse(PDF_DIR / "test-uu.pdf")
                pids.add(pool.last_pid)
            assert pool.started == 3 and len(pids) == 3
        finally:
            pool.close()

    def test_cpu_limit_is_per_document_not_per_process(self) -> None:
        # 4 s of CPU per document (timeout + 1); one process parses until it
        # has used twice that in total, without being stopped.
        pool = ParserPool(ParseLimits(timeout_s=3, pool_size=1))
        try:
            used = 0.0
            for _ in range(20):
                for paper in sorted(PDF_DIR.glob("*.pdf")):
                    assert pool.parse(paper)["pages"] >= 1
                used = _cpu_seconds(pool.last_pid)
                if used > 8:
                    break
            assert used > 8
            assert pool.started == 1
        finally:
            pool.close()


class TestHostile:
    def test_hostile_set_fails_cleanly_and_the_pool_keeps_serving(self, tmp_path: Path) -> None:
        pool = ParserPool(ParseLimits(memory_mb=768, timeout_s=8, max_pages=4000, pool_size=1))
        bad = {
            "truncated": (
                hostile_pdfs.truncated_pdf(PDF_DIR / "papermage.pdf", tmp_path / "t.pdf"),
                "truncated",
            ),
            "encrypted": (hostile_pdfs.encrypted_pdf(tmp_path / "e.pdf"), "encrypted"),
            "pages": (hostile_pdfs.many_pages_pdf(tmp_path / "p.pdf"), "too many pages"),
            "bomb": (hostile_pdfs.flate_bomb_pdf(tmp_path / "b.pdf", 1500), "parser"),
            "not a pdf": (tmp_path / "n.pdf", "not a readable PDF"),
        }
        (tmp_path / "n.pdf").write_text("just some text")
        try:
            for name, (path, reason) in bad.items():
                with pytest.raises(ParseFailed) as failed:
                    pool.parse(path)
                assert reason in str(failed.value), (name, str(failed.value))
                # Every failure leaves a pool that parses the next document.
                assert pool.parse(PDF_DIR / "test-uu.pdf")["pages"] == 1, name
        finally:
            pool.close()

    def test_over_wall_time_fails_with_a_reason(self, tmp_path: Path) -> None:
        # 3,000 dense pages take several seconds even on an idle machine.
        pool = ParserPool(ParseLimits(timeout_s=2, max_pages=4000, pool_size=1))
        try:
            with pytest.raises(ParseFailed) as failed:
                pool.parse(slow_pdf(tmp_path / "s.pdf", pages=3000))
            assert "timed out after 2 s" in str(failed.value)
            assert pool.busy_pids() == []
        finally:
            pool.close()
