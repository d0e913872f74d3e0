"""A real worker routes jobs over two simulator endpoints: a 503 on the first lands
the turn on the second and the job succeeds; a 400 fails the job without fallback.
The ledger's llm step records the chosen profile and model, and every attempt."""

from __future__ import annotations

import json

import httpx
from sqlalchemy.orm import Session, sessionmaker

from services.cli.client import parse_sse
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import Services, Simulator

MODEL = "leaflab-sim"


def _requests(sim: Simulator, key: str) -> int:
    stats = httpx.get(f"{sim.url.removesuffix('/v1')}/_sim/stats", timeout=5).json()
    conv = stats["conversations"].get(key)
    return int(conv["requests"]) if conv else 0


def test_jobs_fall_back_on_503_and_not_on_400(
    services: Services, session_factory: sessionmaker[Session]
) -> None:
    a, b = services.simulator(), services.simulator()
    services.env["LEAFLAB_MODEL_PROFILES"] = json.dumps(
        [
            {"name": "gpu-a", "base_url": a.url, "models": [MODEL]},
            {"name": "gpu-b", "base_url": b.url, "models": [MODEL]},
        ]
    )
    url = services.api()
    services.worker()
    client = client_for(url, make_user(session_factory))

    down = client.post("/v1/sessions", json={}).json()["id"]
    a.set_script(down, {"replies": [{"error": 503}, {"content": "from A"}]})
    b.set_script(down, {"replies": [{"content": "from B"}]})
    bad = client.post("/v1/sessions", json={}).json()["id"]
    a.set_script(bad, {"replies": [{"error": 400, "message": "bad parameter"}, {"content": "A"}]})
    b.set_script(bad, {"replies": [{"content": "from B"}]})

    first = client.post(f"/v1/sessions/{down}/messages", json={"content": "hi"}).json()
    second = client.post(f"/v1/sessions/{bad}/messages", json={"content": "hi"}).json()

    job = wait_job(client, first["job_id"])
    assert job["status"] == "succeeded", job
    assert job["result"]["content"] == "from B"
    steps = client.get(f"/v1/jobs/{first['job_id']}/steps").json()["items"]
    llm = [s for s in steps if s["kind"] == "llm"]
    assert len(llm) == 1 and llm[0]["name"] == MODEL
    assert llm[0]["arguments"]["profile"] == "gpu-b"
    assert llm[0]["arguments"]["attempts"] == [
        f"gpu-a:{MODEL}=server_error 503",
        f"gpu-b:{MODEL}=ok",
    ]
    assert "fallback #1" in llm[0]["arguments"]["route_reason"]

    failed = wait_job(client, second["job_id"])
    assert failed["status"] == "failed"
    assert "400" in (failed["error"] or "") and "bad parameter" in failed["error"]
    assert _requests(a, bad) == 1 and _requests(b, bad) == 0
    steps = client.get(f"/v1/jobs/{second['job_id']}/steps").json()["items"]
    (llm,) = [s for s in steps if s["kind"] == "llm"]
    assert (llm["name"], llm["arguments"]["model"]) == (MODEL, MODEL)
    assert llm["status"] == "failed"
    assert llm["arguments"]["attempts"] == [f"gpu-a:{MODEL}=bad_request 400"]


def test_a_retried_stream_is_marked_on_the_job_event_stream(
    services: Services, session_factory: sessionmaker[Session]
) -> None:
    """A's stream drops after some words; B answers. Watchers get A's partial text, then
    ``model_retry`` (drop it), then B's text: what ``watch`` and the web page render."""
    a, b = services.simulator(), services.simulator()
    services.env["LEAFLAB_MODEL_PROFILES"] = json.dumps(
        [
            {"name": "gpu-a", "base_url": a.url, "models": [MODEL]},
            {"name": "gpu-b", "base_url": b.url, "models": [MODEL]},
        ]
    )
    url = services.api()
    services.worker()
    client = client_for(url, make_user(session_factory))
    session = client.post("/v1/sessions", json={}).json()["id"]
    partial = "one two three four five six seven eight"
    a.set_script(session, {"replies": [{"disconnect": True}, {"content": partial}]})
    b.set_script(session, {"replies": [{"content": "the answer from B"}]})
    posted = client.post(f"/v1/sessions/{session}/messages", json={"content": "hi"}).json()
    job = wait_job(client, posted["job_id"])
    assert job["status"] == "succeeded" and job["result"]["content"] == "the answer from B"
    with client.stream("GET", f"/v1/jobs/{job['id']}/events", timeout=30) as resp:
        events = [e for e in parse_sse(resp.iter_lines()) if e["event"] in ("token", "model_retry")]
    kinds = [e["event"] for e in events]
    retry = kinds.index("model_retry")
    before = "".join(e["data"]["text"] for e in events[:retry])
    after = "".join(e["data"]["text"] for e in events[retry + 1 :])
    assert before and partial.startswith(before)  # A's words, then the marker
    assert after == "the answer from B"
    marker = events[retry]["data"]
    assert marker["attempt"] == 1 and marker["wait_s"] == 0 and "disconnect" in marker["error"]
