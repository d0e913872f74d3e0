"""Per-key rate limits: one Redis token bucket per key, shared by every API process.

Two real uvicorn processes on the same Redis: requests alternating between
them draw from one bucket, so the key gets its burst once, not once per
process. A refusal is 429 with ``Retry-After``; other keys are untouched; the
key works again after waiting as told.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from sqlalchemy.orm import Session, sessionmaker

from services.api.admin.service import create_api_key
from services.common.db import transaction
from services.common.models import Project, User
from tests.conftest import Stack
from tests.fixtures.builders import TestUser, make_project, make_user
from tests.fixtures.processes import Services

RATE_PER_S = 0.5
BURST = 5
PROJECT_BURST = 8


@dataclass
class TwoApis:
    urls: tuple[str, str]


@pytest.fixture(scope="module")
def two_apis(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwoApis]:
    svc = Services(stack, tmp_path_factory.mktemp("rate_limits"))
    svc.env.update(
        {
            "LEAFLAB_RATE_LIMIT_PER_S": str(RATE_PER_S),
            "LEAFLAB_RATE_LIMIT_BURST": str(BURST),
            "LEAFLAB_RATE_LIMIT_PROJECT_PER_S": str(RATE_PER_S),
            "LEAFLAB_RATE_LIMIT_PROJECT_BURST": str(PROJECT_BURST),
        }
    )
    try:
        yield TwoApis((svc.api(), svc.api()))
    finally:
        svc.stop()


def _get(url: str, user: TestUser) -> httpx.Response:
    return _get_with(url, user.key)


def _get_with(url: str, key: str) -> httpx.Response:
    return httpx.get(f"{url}/v1/jobs", headers={"Authorization": f"Bearer {key}"}, timeout=30)


def _more_keys(factory: sessionmaker[Session], user: TestUser, project: str | None = None) -> str:
    with transaction(factory) as db:
        row = db.get(User, user.id)
        assert row is not None
        scope = db.query(Project).filter(Project.name == project).one() if project else None
        _, key = create_api_key(db, user=row, project=scope)
        return key


def test_several_keys_of_one_user_share_the_users_allowance(
    two_apis: TwoApis, session_factory: sessionmaker[Session]
) -> None:
    """Three keys, one user: the user's burst once, not three times."""
    user = make_user(session_factory)
    keys = [user.key, _more_keys(session_factory, user), _more_keys(session_factory, user)]
    answers = [_get_with(two_apis.urls[i % 2], keys[i % 3]) for i in range(3 * BURST)]
    allowed = [r for r in answers if r.status_code == 200]
    # A token or two may come back while we ask; a bucket per key would allow 15.
    assert BURST <= len(allowed) <= BURST + 2, [r.status_code for r in answers]
    refused = next(r for r in answers if r.status_code == 429).json()["error"]
    assert refused["code"] == "rate_limited" and "all of their API keys" in refused["message"]
    # Another user is untouched.
    assert _get(two_apis.urls[0], make_user(session_factory)).status_code == 200


def test_keys_scoped_to_one_project_share_the_projects_allowance(
    two_apis: TwoApis, session_factory: sessionmaker[Session]
) -> None:
    """Three members, each with a key scoped to the project: the project's burst
    (8) in all, though each user's own allowance (5 each, 15 together) is larger."""
    members = [make_user(session_factory) for _ in range(4)]
    project = make_project(session_factory, *members)
    keys = [_more_keys(session_factory, m, project) for m in members[:3]]
    answers = [_get_with(two_apis.urls[i % 2], keys[i % 3]) for i in range(3 * BURST)]
    allowed = [r for r in answers if r.status_code == 200]
    assert PROJECT_BURST <= len(allowed) <= PROJECT_BURST + 2, [r.status_code for r in answers]
    refused = next(r for r in answers if r.status_code == 429).json()["error"]
    assert "in this project" in refused["message"]
    # A member who sent nothing scoped still has her own allowance on an unscoped key.
    last = _get(two_apis.urls[0], members[3])
    assert last.status_code == 200, last.text


def test_two_api_processes_share_one_bucket_per_key(
    two_apis: TwoApis, session_factory: sessionmaker[Session]
) -> None:
    user = make_user(session_factory)
    answers = [_get(two_apis.urls[i % 2], user) for i in range(2 * BURST + 2)]
    allowed = [r for r in answers if r.status_code == 200]
    refused = [r for r in answers if r.status_code == 429]
    # One shared bucket: the burst, plus at most a token refilled while we asked.
    # A bucket per process would have let 2 × BURST through.
    assert BURST <= len(allowed) <= BURST + 1, [r.status_code for r in answers]
    assert len(allowed) + len(refused) == len(answers)
    assert {two_apis.urls[i % 2] for i, r in enumerate(answers) if r.status_code == 429} == set(
        two_apis.urls
    ), "both processes refuse once the shared bucket is empty"
    body = refused[0].json()["error"]
    assert body["code"] == "rate_limited"
    retry_after = int(refused[0].headers["Retry-After"])
    assert 1 <= retry_after <= int(1 / RATE_PER_S) + 1
    # Another key has its own bucket.
    assert _get(two_apis.urls[0], make_user(session_factory)).status_code == 200
    # After waiting as told, the key works again (on either process).
    time.sleep(retry_after)
    assert _get(two_apis.urls[1], user).status_code == 200


def test_the_429_is_declared_in_the_schema(two_apis: TwoApis) -> None:
    document = httpx.get(f"{two_apis.urls[0]}/openapi.json").json()
    job_routes = document["paths"]["/v1/jobs"]
    assert "429" in job_routes["get"]["responses"]
    assert "429" not in document["paths"]["/healthz"]["get"]["responses"]
