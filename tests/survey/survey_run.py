"""Running one scripted survey against the package stack and reading back what it made."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any

import httpx
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from services.cli.client import parse_sse
from services.common.models import JobStep
from tests.fixtures.builders import wait_job
from tests.survey.conftest import SurveyStack
from tests.survey.scripts import expected_keys, survey_scripts

TOPIC = "language models for scientific literature"
CITE_RE = re.compile(r"\[([^\[\]]*@[^\[\]]*)\]")
BIB_KEY_RE = re.compile(r"@misc\{([^,]+),")


@dataclass
class Survey:
    job_id: str
    session_id: str
    job: dict[str, Any]
    files: dict[str, str]


def open_scripted_session(
    stack: SurveyStack, client: httpx.Client, **script_options: Any
) -> tuple[str, list[str]]:
    session_id = str(client.post("/v1/sessions", json={"title": "survey"}).json()["id"])
    keys = expected_keys(stack.documents)
    for key, script in survey_scripts(session_id, keys, **script_options).items():
        stack.sim.set_script(key, script)
    return session_id, keys


def submit(client: httpx.Client, session_id: str, **extra: Any) -> str:
    body = {
        "kind": "survey",
        "session_id": session_id,
        "input": {"topic": TOPIC, "length": "short", "years": "2019-2026"},
        **extra,
    }
    resp = client.post("/v1/jobs", json=body)
    assert resp.status_code == 202, resp.text
    return str(resp.json()["id"])


def artifacts(client: httpx.Client, job_id: str) -> dict[str, str]:
    listed = client.get(f"/v1/jobs/{job_id}/artifacts").json()["items"]
    return {a["name"]: client.get(a["url"]).text for a in listed}


def finish(client: httpx.Client, job_id: str, session_id: str, timeout_s: float = 240) -> Survey:
    job = wait_job(client, job_id, timeout_s=timeout_s)
    return Survey(job_id, session_id, job, artifacts(client, job_id))


def events(client: httpx.Client, job_id: str) -> list[dict[str, Any]]:
    with client.stream("GET", f"/v1/jobs/{job_id}/events", timeout=30) as resp:
        assert resp.status_code == 200
        return list(parse_sse(resp.iter_lines()))


def cited_keys(markdown: str) -> set[str]:
    keys: set[str] = set()
    for group in CITE_RE.findall(markdown):
        keys.update(re.findall(r"@([A-Za-z0-9_:-]+)", group))
    return keys


def bib_keys(bib: str) -> set[str]:
    return set(BIB_KEY_RE.findall(bib))


def step_keys(factory: sessionmaker[Session], job_id: str) -> dict[str, JobStep]:
    """The job's ledger by step key (the API lists steps without their keys)."""
    with factory() as db:
        rows = db.scalars(select(JobStep).where(JobStep.job_id == uuid.UUID(job_id))).all()
        return {r.step_key: r for r in rows}


def block(checks: str, claim: str) -> list[str]:
    """The "Citation checks" lines of one claim: its own line, then one per key."""
    lines = checks.splitlines()
    (start,) = [i for i, ln in enumerate(lines) if ln.startswith("- (") and claim[:40] in ln]
    end = start + 1
    while end < len(lines) and lines[end].startswith("  - "):
        end += 1
    return lines[start:end]
