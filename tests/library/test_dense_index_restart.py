"""A restarted library service searches at once from the dense index it saved on
shutdown (``/healthz`` says ``loaded``), with the same hits as before; after
its saved graph file is truncated it rebuilds the index from the store
(``rebuilt``) and still finds the same chunks."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import redis
from sqlalchemy.orm import Session, sessionmaker

from tests.library import hostile_pdfs
from tests.library.conftest import (
    LibraryProcess,
    LibraryService,
    PdfServer,
    library_env,
    make_user,
    wait_terminal,
)


def _health(proc: LibraryProcess) -> dict[str, Any]:
    body: dict[str, Any] = httpx.get(f"{proc.url}/healthz", timeout=10).json()
    return body


def _dense_hits(client: httpx.Client, proc: LibraryProcess, headers: dict[str, str]) -> list[str]:
    resp = client.get(
        f"{proc.url}/search",
        headers=headers,
        params={"q": "quasi-convex energy estimates in section 3", "mode": "vector", "k": 8},
    )
    assert resp.status_code == 200, resp.text
    return [f"{h['document_id']}:{h['locator']}" for h in resp.json()["items"]]


def _ready_index(proc: LibraryProcess, timeout_s: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        dense: dict[str, Any] = _health(proc)["dense_index"]
        if dense["ready"] or time.monotonic() > deadline:
            return dense
        time.sleep(0.2)


def test_restart_loads_the_saved_index_and_rebuilds_a_truncated_one(
    stack: object,
    files_dir: Path,
    pdf_server: PdfServer,
    isolated_redis_url: str,
    session_factory: sessionmaker[Session],
    unique: str,
    tmp_path: Path,
) -> None:
    # A Redis db of its own: the session's library service must not take this upload.
    redis.Redis.from_url(isolated_redis_url).flushdb()
    env = {**library_env(files_dir, pdf_server), "LEAFLAB_REDIS_URL": isolated_redis_url}
    home = tmp_path / "home"
    home.mkdir()
    owner = make_user(session_factory, unique)
    pdf = hostile_pdfs.text_pdf(tmp_path / "prose.pdf", pages=6, marker=f"m{unique}")

    proc = LibraryProcess(home, env)
    try:
        proc.wait_ready()
        headers = LibraryService(proc.url).headers(owner)
        with httpx.Client(timeout=60) as client:
            resp = client.post(
                f"{proc.url}/documents",
                headers=headers,
                files={"file": ("prose.pdf", pdf.read_bytes(), "application/pdf")},
            )
            assert resp.status_code == 202, resp.text
            doc = wait_terminal(client, LibraryService(proc.url), headers, resp.json()["id"])
            assert doc["status"] == "ready"
            before = _dense_hits(client, proc, headers)
        assert len(before) == 8
        assert _health(proc)["dense_index"]["origin"] == "new"
    finally:
        proc.stop()  # a clean shutdown saves the index

    proc = LibraryProcess(home, env)
    try:
        proc.wait_ready()
        # The first answer after the restart: already loaded and complete.
        dense = _health(proc)["dense_index"]
        assert (dense["origin"], dense["ready"], dense["vectors"]) == (
            "loaded",
            True,
            doc["chunks"],
        )
        with httpx.Client(timeout=60) as client:
            assert _dense_hits(client, proc, headers) == before
    finally:
        proc.stop()

    graph = home / "qdrant" / "edge-dense-index" / "g0.hnsw"
    graph.write_bytes(graph.read_bytes()[:1000])
    proc = LibraryProcess(home, env)
    try:
        proc.wait_ready()
        dense = _ready_index(proc)
        assert (dense["origin"], dense["ready"], dense["vectors"]) == (
            "rebuilt",
            True,
            doc["chunks"],
        )
        assert "checksum" in dense["reason"]
        with httpx.Client(timeout=60) as client:
            assert _dense_hits(client, proc, headers) == before
    finally:
        proc.stop()
