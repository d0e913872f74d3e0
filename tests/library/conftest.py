"""A real library service (uvicorn on a free port, embedded `library` consumer,
Qdrant Edge in a temp dir) over the test Postgres and Redis."""

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import uvicorn
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import User
from services.library.app import create_app
from services.library.settings import LibrarySettings

PDF_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "pdfs"
TOKEN = "test-internal-token"


@dataclass
class LibraryService:
    url: str
    settings: LibrarySettings

    def headers(self, user: uuid.UUID, collections: list[str]) -> dict[str, str]:
        return {
            "X-Leaflab-Internal": TOKEN,
            "X-Leaflab-User": str(user),
            "X-Leaflab-Collections": ",".join(collections),
        }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def library(stack: object, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LibraryService]:
    home = tmp_path_factory.mktemp("library_home")
    settings = LibrarySettings(
        home=home,
        internal_token=TOKEN,
        url_allow_private=True,  # the URL test serves PDFs from loopback
        parse_timeout_s=30,
        parse_memory_mb=768,
        parse_max_pages=1000,
        max_upload_bytes=20_000_000,
        consumer_concurrency=2,
    )
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    else:
        pytest.fail("library service did not start")
    yield LibraryService(url, settings)
    server.should_exit = True
    thread.join(timeout=30)


def make_user(factory: sessionmaker[Session], unique: str) -> uuid.UUID:
    with factory() as db, db.begin():
        user = User(email=f"lib-{unique}-{uuid.uuid4().hex[:6]}@example.org")
        db.add(user)
        db.flush()
        return user.id


def wait_terminal(
    client: httpx.Client,
    service: LibraryService,
    headers: dict[str, str],
    doc_id: str,
    timeout: float = 600,
) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        doc: dict[str, object] = client.get(
            f"{service.url}/documents/{doc_id}", headers=headers
        ).json()
        if doc["status"] in ("ready", "failed"):
            return doc
        time.sleep(0.5)
    raise AssertionError(f"document {doc_id} did not finish in {timeout}s")
