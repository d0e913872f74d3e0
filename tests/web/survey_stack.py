"""A stack for the survey page tests: simulator (auto mode: no script plays a whole survey),
library service, API and agent worker, and a member whose library holds one small shared PDF.

Built like tests/survey/conftest.py's, on a Redis db of its own (the library tests'
session-wide service consumes the shared db's `library` queue), with one PDF instead of
three: ingestion is the slow part.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy.orm import Session, sessionmaker

from tests.conftest import Stack
from tests.fixtures.builders import TestUser, client_for, make_user
from tests.fixtures.library_services import library_services
from tests.fixtures.processes import Simulator
from tests.library.conftest import PDF_DIR

SURVEY_PDF = "1903.10676.pdf"  # SciBERT; arXiv-named, so its citation key carries a year
INGEST_TIMEOUT_S = 300


@dataclass
class SurveyWebStack:
    url: str
    sim: Simulator
    member: TestUser
    document: dict[str, Any]  # {id, title, filename, authors, year, doi}


def ingest_one(client: httpx.Client, name: str) -> dict[str, Any]:
    data = (PDF_DIR / name).read_bytes()
    resp = client.post("/v1/library/documents", files={"file": (name, data, "application/pdf")})
    assert resp.status_code == 202, resp.text
    doc_id = resp.json()["id"]
    deadline = time.monotonic() + INGEST_TIMEOUT_S
    while time.monotonic() < deadline:
        doc = client.get(f"/v1/library/documents/{doc_id}").json()
        assert doc["status"] != "failed", doc
        if doc["status"] == "ready":
            keep = ("title", "authors", "year", "doi")
            return {"id": doc_id, "filename": name, **{k: doc.get(k) for k in keep}}
        time.sleep(1)
    raise AssertionError(f"{name} was not ingested in time")


@contextmanager
def survey_web_stack(
    stack: Stack, base: Path, factory: sessionmaker[Session], isolated_redis_url: str
) -> Iterator[SurveyWebStack]:
    with library_services(stack, base, isolated_redis_url) as (svc, _):
        sim = svc.simulator()
        url = svc.api()
        svc.worker()
        member = make_user(factory)
        with client_for(url, member) as client:
            document = ingest_one(client, SURVEY_PDF)
        yield SurveyWebStack(url, sim, member, document)
