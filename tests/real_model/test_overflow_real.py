"""Overflow and billing against a real llama.cpp server (a process Leaflab did not write).

- A turn that cannot fit a 1,024-token window (Leaflab's tool schemas alone take
  ≈ 4,500 tokens) is refused before sending, as a failed step that says so in
  numbers: the server never sees the request, so there is no HTTP error, no retry
  and no breaker failure.
- A plain call's recorded usage is the server's own (not estimated); a streamed one,
  for which this server reports no usage, is marked estimated.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import httpx
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import SpendRecord
from services.worker.llm.client import ModelClient
from services.worker.llm.pricing import PriceBook
from services.worker.settings import WorkerSettings
from services.worker.spine.budget.gate import BudgetGate
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import Services
from tests.fixtures.real_model import RealModelServer

MAX_TOKENS = 8
MESSAGES = [{"role": "user", "content": "Name one colour."}]


def _chat_requests(server: RealModelServer) -> int:
    return server.log().count("POST /v1/chat/completions")


def test_a_turn_that_cannot_fit_the_window_is_refused_before_sending(
    services: Services,
    session_factory: sessionmaker[Session],
    real_model_factory: Callable[..., RealModelServer],
) -> None:
    server = real_model_factory(n_ctx=1024)
    services.env.update(
        {
            "LEAFLAB_LLM_BASE_URL": server.base_url,
            "LEAFLAB_MODEL": server.model,
            "LEAFLAB_LLM_MAX_TOKENS": "16",
            "LEAFLAB_CONTEXT_LIMIT_TOKENS": "1024",
            "LEAFLAB_CONTEXT_OUTPUT_RESERVE_TOKENS": "16",
        }
    )
    client = client_for(services.api(), make_user(session_factory))
    services.worker()
    # The first turn also lets the worker discover the endpoint (its probes are chat
    # requests too); the second finds the capabilities cached.
    _refused_turn(client, "Hello.")
    before = _chat_requests(server)
    job_id = _refused_turn(client, "Summarise our work so far.")
    (step,) = client.get(f"/v1/jobs/{job_id}/steps").json()["items"]
    assert step["error"]["code"] == "context_overflow"  # not a model_error from the server
    assert _chat_requests(server) == before  # nothing was sent


def _refused_turn(client: httpx.Client, content: str) -> str:
    session_id = client.post("/v1/sessions", json={}).json()["id"]
    job_id = client.post(f"/v1/sessions/{session_id}/messages", json={"content": content}).json()[
        "job_id"
    ]
    job = wait_job(client, job_id, timeout_s=120)
    assert job["status"] == "failed"
    assert "does not fit the model's context window" in job["error"], job["error"]
    assert "> 1008 tokens" in job["error"]  # the window less the output reserve
    return str(job_id)


def test_recorded_usage_is_the_servers_own(
    engine: Engine, session_factory: sessionmaker[Session], real_model: RealModelServer
) -> None:
    direct = httpx.post(
        f"{real_model.base_url}/chat/completions",
        json={"model": real_model.model, "messages": MESSAGES, "max_tokens": MAX_TOKENS},
        timeout=120,
    ).json()["usage"]
    client = ModelClient(real_model.base_url, "", timeout_s=120)
    try:
        whole = client.complete(
            model=real_model.model, messages=MESSAGES, max_tokens=MAX_TOKENS, stream=False
        )
        streamed = client.complete(
            model=real_model.model, messages=MESSAGES, max_tokens=MAX_TOKENS, stream=True
        )
    finally:
        client.close()
    assert not whole.usage.estimated
    assert whole.usage.input_tokens == direct["prompt_tokens"]
    assert whole.usage.output_tokens <= MAX_TOKENS
    # This server reports no usage in a stream: the counts are an estimate, and say so.
    assert streamed.usage.estimated

    # Settled and recorded: the spend row holds the server's figures, not an estimate.
    user = make_user(session_factory)
    gate = BudgetGate(
        writer=engine.execution_options(isolation_level="AUTOCOMMIT"),
        prices=PriceBook(),
        settings=WorkerSettings(llm_max_tokens=MAX_TOKENS),
        user_id=user.id,
        project_id=None,
        job_id=None,
        fence=1,
    )
    admission = gate.admit(messages=MESSAGES, tools=None)
    gate.settle(admission, model=real_model.model, usage=whole.usage, cost=Decimal("0.000001"))
    with session_factory() as db:
        spend = db.scalars(select(SpendRecord).where(SpendRecord.user_id == user.id)).one()
    assert (spend.input_tokens, spend.output_tokens) == (
        direct["prompt_tokens"],
        whole.usage.output_tokens,
    )
    assert spend.estimated is False


def test_a_real_turn_marks_estimated_usage_everywhere_it_is_shown(
    services: Services, session_factory: sessionmaker[Session], real_model: RealModelServer
) -> None:
    """Whether or not the server reported usage for the turn's call (a stream from this
    server carries none), the step, the job and the spend row say the same thing."""
    services.env.update(
        {
            "LEAFLAB_LLM_BASE_URL": real_model.base_url,
            "LEAFLAB_MODEL": real_model.model,
            "LEAFLAB_LLM_MAX_TOKENS": "12",
            "LEAFLAB_CONTEXT_LIMIT_TOKENS": str(real_model.n_ctx),
            "LEAFLAB_LLM_TIMEOUT_S": "300",
        }
    )
    user = make_user(session_factory)
    client = client_for(services.api(), user)
    services.worker()
    session_id = client.post("/v1/sessions", json={}).json()["id"]
    job_id = client.post(f"/v1/sessions/{session_id}/messages", json={"content": "Hi"}).json()[
        "job_id"
    ]
    job = wait_job(client, job_id, timeout_s=240)
    assert job["status"] == "succeeded", job["error"]
    llm = [s for s in client.get(f"/v1/jobs/{job_id}/steps").json()["items"] if s["kind"] == "llm"]
    estimated = [s["result"]["usage"]["estimated"] for s in llm]
    assert job["usage"]["estimated"] is any(estimated)
    with session_factory() as db:
        spend = db.scalars(select(SpendRecord).where(SpendRecord.job_id == job_id)).all()
    assert [s.estimated for s in spend] == estimated
    assert all(
        s["result"]["usage"]["output_tokens"] <= 12 or s["result"]["usage"]["estimated"]
        for s in llm
    )
