"""A real model server (llama.cpp) going away mid-job parks the job; restarted on the
same port, the job resumes and succeeds with nothing lost.

Two outages: the server is down when the turn is taken (it waits as
``waiting_model``, holding no lease), and the server is killed -9 while a reply
is streaming (the broken stream and the refused retries park the job). Each time
the job ends succeeded with one successful llm step and no failed one.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any

import httpx
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from services.cli.client import parse_sse
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import Services
from tests.fixtures.real_model import RealModelServer

TIMEOUT_S = 240  # a few tokens a second on 2 shared CPUs


def _env(server: RealModelServer) -> dict[str, str]:
    return {
        "LEAFLAB_LLM_BASE_URL": server.base_url,
        "LEAFLAB_MODEL": server.model,
        "LEAFLAB_LLM_MAX_TOKENS": "48",
        "LEAFLAB_CONTEXT_LIMIT_TOKENS": str(server.n_ctx),
        "LEAFLAB_MODEL_PROBE_INTERVAL_S": "0.5",
        "LEAFLAB_LLM_MAX_RETRIES": "1",
        "LEAFLAB_LLM_RETRY_MAX_S": "0.2",
        # A real reply takes longer than the fast runtime's 5 s slices.
        "LEAFLAB_TIME_SLICE_S": "60",
    }


def _steps(client: httpx.Client, job_id: str) -> list[tuple[str, str]]:
    items = client.get(f"/v1/jobs/{job_id}/steps").json()["items"]
    return [(s["kind"], s["status"]) for s in items]


def _lease_owner(factory: sessionmaker[Session], job_id: str) -> Any:
    with factory() as db:
        return db.execute(
            text("SELECT lease_owner FROM jobs WHERE id = :id"), {"id": uuid.UUID(job_id)}
        ).scalar_one()


def _first_token(client: httpx.Client, job_id: str, seen: threading.Event) -> None:
    with client.stream("GET", f"/v1/jobs/{job_id}/events", timeout=TIMEOUT_S) as resp:
        for event in parse_sse(resp.iter_lines()):
            if event.get("event") in ("token", "final"):
                seen.set()
                return


def _turn(client: httpx.Client) -> str:
    session = client.post("/v1/sessions", json={}).json()["id"]
    body = {"content": "Name three colours of the rainbow, one per line."}
    return str(client.post(f"/v1/sessions/{session}/messages", json=body).json()["job_id"])


def test_a_job_survives_the_real_server_restarting(
    services: Services,
    session_factory: sessionmaker[Session],
    real_model_factory: Callable[..., RealModelServer],
) -> None:
    server = real_model_factory()
    services.env.update(_env(server))
    url = services.api()
    services.worker()
    client = client_for(url, make_user(session_factory))

    # Down before the turn is taken: the job waits, holding nothing.
    server.stop()
    queued = _turn(client)
    parked = wait_job(client, queued, timeout_s=60, statuses=("waiting_model", "failed"))
    assert parked["status"] == "waiting_model", parked
    assert _lease_owner(session_factory, queued) is None
    server.start()
    done = wait_job(client, queued, timeout_s=TIMEOUT_S)
    assert done["status"] == "succeeded", done
    assert _steps(client, queued) == [("llm", "succeeded")]

    # Killed while the reply streams: the job parks, then finishes on the restarted server.
    streaming = _turn(client)
    seen = threading.Event()
    reader = threading.Thread(target=_first_token, args=(client, streaming, seen), daemon=True)
    reader.start()
    assert seen.wait(TIMEOUT_S), "no token streamed"
    server.kill9()
    server.start()
    done = wait_job(client, streaming, timeout_s=TIMEOUT_S)
    assert done["status"] == "succeeded", done
    assert _steps(client, streaming) == [("llm", "succeeded")]
    with client.stream("GET", f"/v1/jobs/{streaming}/events", timeout=30) as resp:
        statuses = [e["data"] for e in parse_sse(resp.iter_lines()) if e.get("event") == "status"]
    assert any(s["status"] == "waiting_model" for s in statuses), statuses
