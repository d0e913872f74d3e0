"""Small builders for the import tests: post a file, wait for its import, list documents."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from tests.library.api_app import bearer
from tests.library.conftest import PDF_DIR, PdfServer

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bibliography"
REFS_BIB = FIXTURES / "refs.bib"
CSL_JSON = FIXTURES / "zotero-csl.json"
BBT_JSON = FIXTURES / "zotero-better-bibtex.json"
SCIBERT_ARXIV = "1903.10676"


def serve_arxiv(pdf_server: PdfServer) -> None:
    """SciBERT's arXiv PDF (a one-page shared PDF) where LEAFLAB_ARXIV_PDF_BASE points;
    every other arXiv id answers 404."""
    folder = pdf_server.root / "arxiv"
    folder.mkdir(exist_ok=True)
    shutil.copyfile(PDF_DIR / f"{SCIBERT_ARXIV}.pdf", folder / SCIBERT_ARXIV)


def post_import(
    client: TestClient, key: str, content: bytes, name: str, project: str | None = None
) -> Any:
    return client.post(
        "/v1/library/imports",
        headers=bearer(key),
        files={"file": (name, content, "application/octet-stream")},
        data={"project": project} if project else {},
    )


def start_import(client: TestClient, key: str, path: Path, project: str | None = None) -> str:
    resp = post_import(client, key, path.read_bytes(), path.name, project)
    assert resp.status_code == 202, resp.text
    return str(resp.json()["id"])


def wait_import(client: TestClient, key: str, import_id: str, timeout_s: float = 90) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        resp = client.get(f"/v1/library/imports/{import_id}", headers=bearer(key))
        assert resp.status_code == 200, resp.text
        body = resp.json()
        if body["status"] == "done":
            return body
        time.sleep(0.3)
    raise AssertionError(f"import {import_id} not done in {timeout_s}s: {body}")


def documents(client: TestClient, key: str) -> list[dict[str, Any]]:
    resp = client.get("/v1/library/documents", headers=bearer(key))
    assert resp.status_code == 200, resp.text
    items: list[dict[str, Any]] = resp.json()["items"]
    return items


def by_title(docs: list[dict[str, Any]], start: str) -> dict[str, Any]:
    found = [d for d in docs if (d.get("title") or "").startswith(start)]
    assert len(found) == 1, (start, [d.get("title") for d in docs])
    return found[0]


def entry(body: dict[str, Any], key: str) -> dict[str, Any]:
    found: dict[str, Any] = next(e for e in body["entries"] if e["key"] == key)
    return found
