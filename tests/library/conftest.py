"""A real library service (uvicorn on a free port, embedded `library` consumer,
Qdrant Edge in a temp dir) over the test Postgres and Redis.

All library processes of a run share one file store (as the API and every
ingest worker do in a deployment). The session's service sweeps rarely: tests
that exercise the sweeper start their own service on a separate Redis db, and
two sweepers over one database would otherwise take each other's documents.
"""

from __future__ import annotations

import functools
import http.server
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import User


def _shared_pdfs() -> Path:
    """shared/data/pdfs next to the checkout, or next to a folder above it (worktrees)."""
    repo = Path(__file__).resolve().parents[2]
    for folder in repo.parents:
        candidate = folder / "shared" / "data" / "pdfs"
        if candidate.is_dir():
            return candidate
    return repo.parent / "shared" / "data" / "pdfs"


PDF_DIR = _shared_pdfs()
TOKEN = "test-internal-token"


@dataclass
class LibraryService:
    url: str

    def headers(self, user: uuid.UUID) -> dict[str, str]:
        return {"X-Leaflab-Internal": TOKEN, "X-Leaflab-User": str(user)}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


LIBRARY_ENV = {
    "LEAFLAB_INTERNAL_TOKEN": TOKEN,
    "LEAFLAB_INGEST_SWEEP_INTERVAL_S": "3600",
    "LEAFLAB_PARSE_TIMEOUT_S": "30",
    "LEAFLAB_PARSE_MEMORY_MB": "768",
    "LEAFLAB_PARSE_MAX_PAGES": "1000",
    "LEAFLAB_MAX_UPLOAD_BYTES": "20000000",
    "LEAFLAB_CONSUMER_CONCURRENCY": "2",
    # No OpenAlex / Crossref lookups unless a test points them at its recorded
    # server (tests/fixtures/recorded_metadata.py): the public internet is not a test's.
    "LEAFLAB_METADATA_LOOKUP": "false",
    # ONNX exports are made once and shared by every library process of every run.
    "LEAFLAB_EMBEDDING_MODELS_DIR": str(Path(tempfile.gettempdir()) / "leaflab-test-models"),
}


@dataclass
class PdfServer:
    """A loopback HTTP server over a folder, listed in LEAFLAB_WEB_ALLOW."""

    root: Path
    port: int

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"


@pytest.fixture(scope="session")
def pdf_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PdfServer]:
    root = tmp_path_factory.mktemp("served")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield PdfServer(root, int(server.server_address[1]))
    server.shutdown()


@pytest.fixture(scope="session")
def files_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("library_files")


class LibraryProcess:
    """One library service process; ``kill9`` crashes it as a power cut would."""

    def __init__(self, home: Path, env: dict[str, str]) -> None:
        self.home = home
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = home / f"library-{self.port}.log"
        self._log = open(self.log_path, "ab")  # noqa: SIM115
        argv = [sys.executable, "-m", "uvicorn", "services.library.app:create_app", "--factory"]
        argv += ["--host", "127.0.0.1", "--port", str(self.port), "--log-level", "warning"]
        self.proc = subprocess.Popen(
            argv,
            env={**os.environ, **LIBRARY_ENV, "LEAFLAB_HOME": str(home), **env},
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_ready(self, timeout_s: float = 180) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail("library service exited:\n" + self.log()[-3000:])
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        pytest.fail("library service did not start:\n" + self.log()[-3000:])

    def kill9(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill9()
        self._log.close()


def library_env(files_dir: Path, pdf_server: PdfServer) -> dict[str, str]:
    return {
        "LEAFLAB_FILES_DIR": str(files_dir),
        "LEAFLAB_WEB_ALLOW": f"127.0.0.1:{pdf_server.port}",
        # Imported entries' arXiv PDFs come from the loopback server's arxiv/ folder.
        "LEAFLAB_ARXIV_PDF_BASE": pdf_server.url("arxiv"),
    }


@pytest.fixture(scope="session")
def library(
    stack: object,
    tmp_path_factory: pytest.TempPathFactory,
    files_dir: Path,
    pdf_server: PdfServer,
) -> Iterator[LibraryService]:
    """The library service in its own process, as deployed: its embedded Celery
    consumer must not share Celery's process-global state with test workers."""
    home = tmp_path_factory.mktemp("library_home")
    env = library_env(files_dir, pdf_server)
    proc = LibraryProcess(home, env)
    proc.wait_ready()
    yield LibraryService(proc.url)
    proc.stop()


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
