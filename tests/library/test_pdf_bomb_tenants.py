"""One user's PDF bomb must not fail another user's documents.

User A uploads a ~1 MB PDF whose page inflates to 300 MB of text operators; the
library's memory-capped parser refuses it. That parser process is out of
address space afterwards: kept in the pool, it failed every later document
("calloc failed", "out of memory") until it had served 200. Here the library
runs one parser process and one consumer, so user B's documents go to whatever
process the pool hands out next: they must all be ready.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis
from sqlalchemy.orm import Session, sessionmaker

from tests.library import hostile_pdfs
from tests.library.conftest import (
    PDF_DIR,
    LibraryProcess,
    LibraryService,
    PdfServer,
    library_env,
    make_user,
    wait_terminal,
)


@pytest.fixture
def one_parser_library(
    files_dir: Path, pdf_server: PdfServer, isolated_redis_url: str, tmp_path: Path
) -> Iterator[LibraryService]:
    """A library service with a single parser process, on a Redis db of its own
    (the session's service must not take these documents)."""
    redis.Redis.from_url(isolated_redis_url).flushdb()
    env = {
        **library_env(files_dir, pdf_server),
        "LEAFLAB_REDIS_URL": isolated_redis_url,
        "LEAFLAB_PARSE_POOL_SIZE": "1",
        "LEAFLAB_CONSUMER_CONCURRENCY": "1",
        "LEAFLAB_PARSE_MEMORY_MB": "768",
    }
    home = tmp_path / "home"
    home.mkdir()
    proc = LibraryProcess(home, env)
    try:
        proc.wait_ready()
        yield LibraryService(proc.url)
    finally:
        proc.stop()


def _upload(
    client: httpx.Client, service: LibraryService, headers: dict[str, str], pdf: Path
) -> str:
    resp = client.post(
        f"{service.url}/documents",
        headers=headers,
        files={"file": (pdf.name, pdf.read_bytes(), "application/pdf")},
    )
    assert resp.status_code == 202, resp.text
    return str(resp.json()["id"])


def test_a_bomb_from_one_user_fails_alone_and_the_next_users_papers_ingest(
    one_parser_library: LibraryService,
    session_factory: sessionmaker[Session],
    unique: str,
    tmp_path: Path,
) -> None:
    service = one_parser_library
    user_a = make_user(session_factory, f"{unique}-a")
    user_b = make_user(session_factory, f"{unique}-b")
    bomb = hostile_pdfs.text_bomb_pdf(tmp_path / "bomb.pdf", 300)
    papers = [
        hostile_pdfs.theorem_pdf(tmp_path / "theorem.pdf"),
        PDF_DIR / "test-uu.pdf",
        PDF_DIR / "1903.10676.pdf",
    ]
    with httpx.Client(timeout=60) as client:
        headers_a = service.headers(user_a)
        bombed = wait_terminal(
            client, service, headers_a, _upload(client, service, headers_a, bomb)
        )
        assert bombed["status"] == "failed"
        error = str(bombed["error"])
        assert "exceeded the parser memory limit (768 MiB)" in error, error
        assert "calloc" not in error and str(tmp_path) not in error

        headers_b = service.headers(user_b)
        ids = [_upload(client, service, headers_b, pdf) for pdf in papers]
        done = [wait_terminal(client, service, headers_b, doc_id, timeout=300) for doc_id in ids]
    outcomes = {str(d["filename"]): (d["status"], d.get("error")) for d in done}
    assert all(status == "ready" for status, _ in outcomes.values()), outcomes
    assert all(int(str(d["chunks"])) > 0 for d in done), done
