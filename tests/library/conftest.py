"""A real library service (uvicorn on a free port, embedded `library` consumer,
Qdrant Edge in a temp dir) over the test Postgres and Redis."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import User
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


LIBRARY_ENV = {
    "LEAFLAB_INTERNAL_TOKEN": TOKEN,
    "LEAFLAB_URL_ALLOW_PRIVATE": "true",  # the URL test serves PDFs from loopback
    "LEAFLAB_PARSE_TIMEOUT_S": "30",
    "LEAFLAB_PARSE_MEMORY_MB": "768",
    "LEAFLAB_PARSE_MAX_PAGES": "1000",
    "LEAFLAB_MAX_UPLOAD_BYTES": "20000000",
    "LEAFLAB_CONSUMER_CONCURRENCY": "2",
}


@pytest.fixture(scope="session")
def library(stack: object, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LibraryService]:
    """The library service in its own process, as deployed: its embedded Celery
    consumer must not share Celery's process-global state with test workers."""
    home = tmp_path_factory.mktemp("library_home")
    env = {**os.environ, **LIBRARY_ENV, "LEAFLAB_HOME": str(home)}
    settings = LibrarySettings(**{"home": home, **_settings_overrides()})
    port = _free_port()
    log = open(home / "library.log", "ab")  # noqa: SIM115
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "services.library.app:create_app",
            "--factory",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail("library service exited:\n" + (home / "library.log").read_text()[-3000:])
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    else:
        pytest.fail("library service did not start")
    yield LibraryService(url, settings)
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
    log.close()


def _settings_overrides() -> dict[str, object]:
    """LIBRARY_ENV as LibrarySettings keyword arguments (what the process reads)."""
    return {k.removeprefix("LEAFLAB_").lower(): v for k, v in LIBRARY_ENV.items()}


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
