"""A plain chat turn against the real server, end to end: API → worker → llama.cpp → SSE.

Judged on behaviour, not on the tiny model's wisdom: the job succeeds, its tokens reach
the SSE stream while the model is still generating (before the final event), and the
final content is exactly the assistant message the session recorded.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
from sqlalchemy.orm import Session, sessionmaker

from services.cli.client import parse_sse
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import Services
from tests.fixtures.real_model import RealModelServer

MAX_TOKENS = 48  # a few seconds of generation on 2 CPUs


def real_model_env(server: RealModelServer) -> dict[str, str]:
    """Point every Leaflab process at the real server (as LEAFLAB_* variables do for users)."""
    return {
        "LEAFLAB_LLM_BASE_URL": server.base_url,
        "LEAFLAB_MODEL": server.model,
        "LEAFLAB_LLM_MAX_TOKENS": str(MAX_TOKENS),
        "LEAFLAB_CONTEXT_LIMIT_TOKENS": str(server.n_ctx),
    }


def _timed_events(client: httpx.Client, job_id: str) -> list[tuple[float, dict[str, Any]]]:
    """Every event of the job with the moment it arrived here, until the final one."""
    out: list[tuple[float, dict[str, Any]]] = []
    with client.stream("GET", f"/v1/jobs/{job_id}/events", timeout=180) as resp:
        assert resp.status_code == 200
        for event in parse_sse(resp.iter_lines()):
            out.append((time.monotonic(), event))
            if event["event"] == "final":
                break
    return out


def test_plain_chat_turn_streams_tokens_and_records_the_answer(
    real_model: RealModelServer,
    services: Services,
    session_factory: sessionmaker[Session],
) -> None:
    services.env.update(real_model_env(real_model))
    url = services.api()
    services.worker(concurrency=1)
    client = client_for(url, make_user(session_factory))
    session = client.post("/v1/sessions", json={"title": "real model chat"}).json()

    posted = client.post(
        f"/v1/sessions/{session['id']}/messages", json={"content": "Say hello in one sentence."}
    )
    assert posted.status_code == 202, posted.text
    job_id = posted.json()["job_id"]
    events = _timed_events(client, job_id)
    job = wait_job(client, job_id, timeout_s=30)

    assert job["status"] == "succeeded", (job, real_model.log()[-2000:])
    kinds = [e["event"] for _, e in events]
    assert kinds[-1] == "final" and events[-1][1]["data"]["status"] == "succeeded"
    tokens = [(t, e) for t, e in events if e["event"] == "token"]
    assert tokens, kinds
    final_at = events[-1][0]
    # Streamed, not delivered in one piece at the end: the first token event arrived
    # while the model was still generating, well before the final event.
    assert all(t <= final_at for t, _ in tokens)
    assert len(tokens) >= 2, f"the answer came in {len(tokens)} token event(s)"
    assert final_at - tokens[0][0] > 0.2, "tokens arrived only with the final event"

    streamed = "".join(e["data"]["text"] for _, e in tokens)
    messages = client.get(f"/v1/sessions/{session['id']}/messages").json()["items"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    answer = messages[1]["content"]
    assert answer and answer.strip()
    assert job["result"]["content"] == answer
    assert streamed.strip() == answer.strip()

    steps = client.get(f"/v1/jobs/{job_id}/steps").json()["items"]
    llm = [s for s in steps if s["kind"] == "llm"]
    assert len(llm) == 1 and llm[0]["status"] == "succeeded"
