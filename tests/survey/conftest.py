"""One stack for the survey tests: simulator, library service, API, agent worker,
and a member whose personal library holds three of the shared PDFs.

Ingesting is the slow part (parsing + embeddings), so it happens once per run
of this package; each test opens its own session, so its simulator scripts
never meet another test's.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from sqlalchemy.orm import Session, sessionmaker

from tests.conftest import Stack
from tests.fixtures.builders import TestUser, client_for, make_user
from tests.fixtures.library_services import library_services
from tests.fixtures.processes import Services, Simulator
from tests.fixtures.recorded_web import RecordedWeb, serve_recorded_web
from tests.library.conftest import PDF_DIR

if TYPE_CHECKING:
    from tests.survey.survey_run import Survey

# arXiv-named files: the year in each citation key comes from the file name.
SURVEY_PDFS = ("1903.10676.pdf", "2203.00130v1.pdf", "2206.10883v3.pdf")


@dataclass
class SurveyStack:
    services: Services
    sim: Simulator
    url: str
    member: TestUser
    documents: list[dict[str, Any]]  # {id, title, filename}
    web: RecordedWeb  # OpenAlex, recorded: a search for "attention" finds a paper

    def client(self) -> httpx.Client:
        return client_for(self.url, self.member)

    def sim_requests(self, key: str) -> list[dict[str, Any]]:
        base = self.sim.url.removesuffix("/v1")
        items: list[dict[str, Any]] = httpx.get(
            f"{base}/_sim/requests", params={"key": key}, timeout=5
        ).json()["items"]
        return items


def _ingest(client: httpx.Client) -> list[dict[str, Any]]:
    ids = []
    for name in SURVEY_PDFS:
        data = (PDF_DIR / name).read_bytes()
        resp = client.post("/v1/library/documents", files={"file": (name, data, "application/pdf")})
        assert resp.status_code == 202, resp.text
        ids.append(resp.json()["id"])
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        docs = {d["id"]: d for d in client.get("/v1/library/documents").json()["items"]}
        states = [docs[i]["status"] for i in ids if i in docs]
        assert "failed" not in states, docs
        if states.count("ready") == len(ids):
            return [
                {
                    k: docs[i][k]
                    for k in ("id", "title", "filename", "authors", "year", "doi", "arxiv_id")
                }
                for i in ids
            ]
        time.sleep(1)
    raise AssertionError("the shared PDFs were not ingested in time")


@pytest.fixture(scope="package")
def survey_stack(
    stack: Stack,
    tmp_path_factory: pytest.TempPathFactory,
    session_factory: sessionmaker[Session],
    isolated_redis_url: str,
) -> Iterator[SurveyStack]:
    base = tmp_path_factory.mktemp("survey")
    with (
        library_services(stack, base, isolated_redis_url) as (svc, _),
        serve_recorded_web() as recorded,
    ):
        svc.env.update(
            {
                "LEAFLAB_OPENALEX_BASE_URL": recorded.base,
                "LEAFLAB_WEB_ALLOW": recorded.allow_entry,
            }
        )
        sim = svc.simulator()
        url = svc.api()
        svc.worker()
        member = make_user(session_factory)
        with client_for(url, member) as client:
            documents = _ingest(client)
        yield SurveyStack(svc, sim, url, member, documents, recorded)


@pytest.fixture(scope="package")
def baseline(survey_stack: SurveyStack) -> Survey:
    """One uninterrupted scripted survey: checked by test_pipeline, compared with by
    the resume tests."""
    from tests.survey.survey_run import finish, open_scripted_session, submit

    with survey_stack.client() as client:
        session_id, _ = open_scripted_session(survey_stack, client)
        job_id = submit(client, session_id)
        return finish(client, job_id, session_id)
