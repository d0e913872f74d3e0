"""Outages park jobs, they do not fail them: real API, workers and simulator processes.

With the simulator stopped a submitted turn becomes ``waiting_model``: no lease,
no failed llm step, a status event that names the endpoint, and no slot under
the per-user cap. Workers killed -9 and restarted during the wait change
nothing; the simulator started again on the same port resumes the jobs, which
answer; a later turn of the same session waits behind them. A cancel ends a
waiting job at once. An outage longer than
``LEAFLAB_MODEL_OUTAGE_MAX_S`` fails the job with a clear message, and a 400
request error still fails at once, never parked.
"""

from __future__ import annotations

import time
import uuid
from typing import Any
from urllib.parse import urlsplit

import httpx
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from services.cli.client import parse_sse
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import Services

QUICK = {
    "LEAFLAB_MODEL_PROBE_INTERVAL_S": "0.3",
    "LEAFLAB_MODEL_PROBE_TIMEOUT_S": "1",
    "LEAFLAB_LLM_MAX_RETRIES": "1",
    "LEAFLAB_LLM_RETRY_MAX_S": "0.1",
}


def _turn(client: httpx.Client, content: str = "hello") -> tuple[str, str]:
    session = client.post("/v1/sessions", json={}).json()["id"]
    job = client.post(f"/v1/sessions/{session}/messages", json={"content": content}).json()
    return str(session), str(job["job_id"])


def _row(factory: sessionmaker[Session], job_id: str) -> Any:
    with factory() as db:
        return db.execute(
            text(
                "SELECT status, lease_owner, lease_until, model_wait_since, model_wait, "
                "(SELECT count(*) FROM job_steps s WHERE s.job_id = j.id AND s.kind = 'llm') "
                "AS llm_steps FROM jobs j WHERE id = :id"
            ),
            {"id": uuid.UUID(job_id)},
        ).one()


def _events(client: httpx.Client, job_id: str) -> list[dict[str, Any]]:
    with client.stream("GET", f"/v1/jobs/{job_id}/events", timeout=30) as resp:
        assert resp.status_code == 200
        return list(parse_sse(resp.iter_lines()))


def _statuses(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["data"] for e in events if e.get("event") == "status"]


def test_a_turn_waits_out_an_outage_and_worker_restarts_then_answers(
    services: Services, session_factory: sessionmaker[Session]
) -> None:
    services.env.update({**QUICK, "LEAFLAB_MAX_RUNNING_JOBS_PER_USER": "1"})
    sim = services.simulator()
    port = int(urlsplit(sim.url).port or 0)
    url = services.api()
    worker = services.worker()
    client = client_for(url, make_user(session_factory))
    sim.proc.stop()  # the endpoint goes down (a vLLM restart)

    first_session, first = _turn(client)
    second_session, second = _turn(client)
    _, doomed = _turn(client)
    for job_id in (first, second, doomed):
        # With a cap of 1 the later jobs could only run (and park) because a waiting
        # job holds no slot.
        parked = wait_job(client, job_id, timeout_s=40, statuses=("waiting_model", "failed"))
        assert parked["status"] == "waiting_model", parked
        assert parked["model_wait_since"] is not None
        assert sim.url in parked["error"], parked["error"]
        row = _row(session_factory, job_id)
        assert row.lease_owner is None and row.lease_until is None
        assert row.llm_steps == 0  # the failed call is not in the ledger
        assert row.model_wait["endpoints"][0]["base_url"] == sim.url

    listed = client.get("/v1/jobs", params={"status": "waiting_model"}).json()["items"]
    assert {first, second, doomed} <= {j["id"] for j in listed}
    # A later turn of a waiting job's session waits behind it (turns run in order).
    follow_up = client.post(
        f"/v1/sessions/{first_session}/messages", json={"content": "and then?"}
    ).json()["job_id"]
    cancelled = client.post(f"/v1/jobs/{doomed}/cancel")
    assert cancelled.status_code in (200, 202), cancelled.text
    assert wait_job(client, doomed, timeout_s=10)["status"] == "cancelled"

    # Every worker dies during the wait, and a new one starts: the state is in Postgres.
    worker.kill9()
    services.worker()
    time.sleep(1.5)
    assert _row(session_factory, first).status == "waiting_model"
    assert _row(session_factory, follow_up).status == "queued"

    # The same endpoint is back, its replies loaded as it starts: a job the probe
    # resumes at once must not meet an unscripted simulator (auto mode).
    sim = services.simulator(
        script={"replies": [{"content": "scripted answer"}, {"content": "follow-up"}]},
        port=port,
    )
    for job_id, answer in ((first, "scripted answer"), (second, "scripted answer")):
        done = wait_job(client, job_id, timeout_s=40)
        assert done["status"] == "succeeded", done
        assert done["result"]["content"] == answer
        assert done["model_wait_since"] is None
        steps = client.get(f"/v1/jobs/{job_id}/steps").json()["items"]
        assert [(s["kind"], s["status"]) for s in steps] == [("llm", "succeeded")]
    assert wait_job(client, follow_up, timeout_s=30)["result"]["content"] == "follow-up"
    statuses = _statuses(_events(client, first))
    waiting = [s for s in statuses if s["status"] == "waiting_model"]
    assert waiting and f"default ({sim.url})" in waiting[0]["message"], statuses
    assert any(s["status"] == "queued" and "answers again" in s["message"] for s in statuses)
    assert _row(session_factory, doomed).status == "cancelled"


def test_a_request_error_fails_at_once_and_a_long_outage_fails_clearly(
    services: Services, session_factory: sessionmaker[Session]
) -> None:
    services.env.update({**QUICK, "LEAFLAB_MODEL_OUTAGE_MAX_S": "2"})
    sim = services.simulator()
    url = services.api()
    services.worker()
    client = client_for(url, make_user(session_factory))

    session = client.post("/v1/sessions", json={}).json()["id"]
    sim.set_script(session, {"replies": [{"error": 400, "message": "bad parameter"}]})
    bad = client.post(f"/v1/sessions/{session}/messages", json={"content": "hi"}).json()["job_id"]
    failed = wait_job(client, bad, timeout_s=30)
    assert failed["status"] == "failed" and "bad parameter" in failed["error"], failed
    assert not [s for s in _statuses(_events(client, bad)) if s["status"] == "waiting_model"]

    sim.proc.stop()
    started = time.monotonic()
    _, job_id = _turn(client)
    parked = wait_job(client, job_id, timeout_s=30, statuses=("waiting_model", "failed"))
    assert parked["status"] == "waiting_model", parked
    gave_up = wait_job(client, job_id, timeout_s=30)
    assert gave_up["status"] == "failed", gave_up
    assert time.monotonic() - started >= 2
    error = gave_up["error"]
    assert error.startswith(f"the model endpoint default ({sim.url}) was unreachable for ")
    assert "last error:" in error and "connection" in error, error
    assert _row(session_factory, job_id).llm_steps == 0


def test_an_endpoint_that_is_up_but_keeps_failing_the_request_fails_the_job(
    services: Services, session_factory: sessionmaker[Session]
) -> None:
    # /models answers (the probe resumes the job each time) while every completion of
    # this conversation is an HTTP 500: a poison request, not an outage to wait out.
    services.env.update({**QUICK, "LEAFLAB_MODEL_SERVER_ERROR_PARKS": "3"})
    sim = services.simulator()
    url = services.api()
    services.worker()
    client = client_for(url, make_user(session_factory))
    session = client.post("/v1/sessions", json={}).json()["id"]
    boom = {"error": 500, "message": "engine crashed on this prompt"}
    sim.set_script(session, {"replies": [*([boom] * 40), {"content": "never"}]})
    job_id = client.post(f"/v1/sessions/{session}/messages", json={"content": "hi"}).json()[
        "job_id"
    ]
    failed = wait_job(client, job_id, timeout_s=60)
    assert failed["status"] == "failed", failed
    error = failed["error"]
    assert "is up but answered a server error to this request 3 times in a row" in error, error
    assert "engine crashed on this prompt" in error
    parks = [s for s in _statuses(_events(client, job_id)) if s["status"] == "waiting_model"]
    assert len(parks) == 2, parks  # parked twice, failed at the third
    assert _row(session_factory, job_id).llm_steps == 0


def test_memory_maintenance_waits_out_an_overloaded_model(
    services: Services, session_factory: sessionmaker[Session]
) -> None:
    services.env.update({**QUICK, "LEAFLAB_MEMORY_EVERY_TURNS": "1"})
    sim = services.simulator()
    url = services.api()
    services.worker()
    client = client_for(url, make_user(session_factory))
    session, turn = _turn(client)
    # 1 + LEAFLAB_LLM_MAX_RETRIES (1) tries find it overloaded; the resumed call answers.
    overloaded = {"error": 503, "message": "overloaded"}
    sim.set_script(f"{session}:memory", {"replies": [overloaded, overloaded, {"content": "-"}]})
    assert wait_job(client, turn)["status"] == "succeeded"
    memory = None
    deadline = time.monotonic() + 20
    while memory is None and time.monotonic() < deadline:
        with session_factory() as db:
            memory = db.execute(
                text("SELECT id FROM jobs WHERE session_id = :s AND kind = 'memory'"),
                {"s": uuid.UUID(session)},
            ).scalar()
        time.sleep(0.2)
    assert memory is not None, "no memory maintenance job was scheduled"
    done = wait_job(client, str(memory), timeout_s=30)
    assert done["status"] == "succeeded", done
    steps = client.get(f"/v1/jobs/{memory}/steps").json()["items"]
    assert [s["status"] for s in steps if s["kind"] == "llm"] == ["succeeded"]
    waiting = [s for s in _statuses(_events(client, str(memory))) if s["status"] == "waiting_model"]
    assert waiting and "overloaded" in waiting[0]["message"], waiting
