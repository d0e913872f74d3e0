"""pdf_fetch with add_to_library survives a worker killed mid-call: the
resumed job adds the paper once.

The first worker dies (SIGKILL, a failpoint) right after the tool ran — the
paper stored and registered — but before its step was recorded. A second
worker re-runs the call (an idempotent tool) and finds the same document.
"""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import Document
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import Services
from tests.fixtures.recorded_web import RecordedWeb


def test_a_killed_pdf_fetch_is_resumed_without_adding_the_paper_twice(
    services: Services, recorded_web: RecordedWeb, session_factory: sessionmaker[Session]
) -> None:
    services.env["LEAFLAB_WEB_ALLOW"] = recorded_web.allow_entry
    sim = services.simulator()
    url = services.api()
    services.env["LEAFLAB_FAILPOINTS"] = "tool.after_effect=kill@1"
    victim = services.worker("victim")
    user = make_user(session_factory)
    client = client_for(url, user)
    session = client.post("/v1/sessions", json={"title": "crash"}).json()
    pdf_url = f"{recorded_web.base}/paper.pdf"
    sim.set_script(
        session["id"],
        {
            "replies": [
                {
                    "tool_calls": [
                        {"name": "pdf_fetch", "arguments": {"url": pdf_url, "add_to_library": True}}
                    ]
                },
                {"content": "added"},
            ]
        },
    )
    job_id = client.post(
        f"/v1/sessions/{session['id']}/messages", json={"content": "add the paper"}
    ).json()["job_id"]
    victim.popen.wait(120)  # killed by its failpoint after the tool ran
    assert victim.popen.returncode == -9
    with session_factory() as db:
        before = db.scalars(select(Document).where(Document.owner_id == user.id)).all()
    assert len(before) == 1  # the call had taken effect before the crash

    del services.env["LEAFLAB_FAILPOINTS"]
    services.worker("rescuer")
    job = wait_job(client, job_id, timeout_s=120)

    assert job["status"] == "succeeded", job
    steps = [
        s for s in client.get(f"/v1/jobs/{job_id}/steps").json()["items"] if s["kind"] == "tool"
    ]
    assert [s["status"] for s in steps] == ["succeeded"]
    data = steps[0]["result"]["data"]
    assert data["document_id"] == str(before[0].id) and data["duplicate"] is True
    with session_factory() as db:
        after = db.scalars(select(Document).where(Document.owner_id == user.id)).all()
        assert [d.id for d in after] == [uuid.UUID(data["document_id"])]
    assert recorded_web.hits["/paper.pdf"] == 2  # fetched by each worker, stored once
