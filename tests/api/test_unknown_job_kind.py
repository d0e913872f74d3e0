"""A job of a kind this version does not know is listed and shown, not a 500.

Such a row comes from a newer version during a rolling upgrade (or a hand-made
insert); the worker fails it with a reason. A listing that contains it must
still answer, or one row hides every other job from the user and the admin.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts.statuses import JobStatus
from services.common.models import Job
from tests.conftest import Stack
from tests.fixtures.builders import client_for, make_user
from tests.fixtures.processes import Services


@pytest.fixture(scope="module")
def api_url(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    svc = Services(stack, tmp_path_factory.mktemp("unknown-job-kind"))
    try:
        yield svc.api()
    finally:
        svc.stop()


def test_a_job_of_an_unknown_kind_is_listed_and_shown_as_stored(
    api_url: str, session_factory: sessionmaker[Session]
) -> None:
    user = make_user(session_factory)
    admin = make_user(session_factory, admin=True)
    with session_factory() as db:
        job = Job(user_id=user.id, kind="hologram", input={}, status=JobStatus.FAILED)
        db.add(job)
        db.commit()
        job_id = str(job.id)
    with client_for(api_url, user) as client:
        own = client.get("/v1/jobs")
        shown = client.get(f"/v1/jobs/{job_id}")
    with client_for(api_url, admin) as client:
        everyone = client.get("/v1/jobs", params={"all": "true", "user": str(user.id)})
    assert own.status_code == 200, own.text
    assert shown.status_code == 200, shown.text
    assert shown.json()["kind"] == "hologram"
    assert everyone.status_code == 200, everyone.text
    listed = {j["id"]: j["kind"] for j in own.json()["items"]}
    assert listed == {job_id: "hologram"}
    assert job_id in {j["id"] for j in everyone.json()["items"]}
