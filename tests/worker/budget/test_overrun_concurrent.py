"""The issue's scenario on real processes: 20 concurrent jobs whose replies are far longer
than ``max_tokens`` (the simulator does not truncate) against a $0.005 budget.

Before: each call was charged its whole reported reply and the budget ended at 16× its
limit. Now: ``spent`` never passes the limit (sampled throughout), each excess is an
overrun row, the admin sees the overrun, and the budget refuses further calls (the
remaining jobs pause, saying why) until an admin sets it again.
"""

from __future__ import annotations

import threading
import time
from decimal import Decimal

from sqlalchemy import select, text
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import BudgetOverrun, Job
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import Services

JOBS = 20
LIMIT = Decimal("0.005")
MAX_TOKENS = 10
# ≈ 1,000 tokens reported per reply: $0.10 at $100/M output, 20× the whole budget.
LONG_REPLY = "word " * 600
ENV = {
    "LEAFLAB_LLM_MAX_TOKENS": str(MAX_TOKENS),
    "LEAFLAB_CONTEXT_OUTPUT_RESERVE_TOKENS": str(MAX_TOKENS),
    # Output dear, input nearly free: the reservation (prompt + 10 tokens) is ≈ $0.001.
    "LEAFLAB_DEFAULT_MODEL_PRICE": "[0.01, 100.0, 0.01]",
}


def _sample(factory: sessionmaker[Session], stop: threading.Event, over: list[str]) -> list[int]:
    samples = [0]

    def run() -> None:
        while not stop.is_set():
            with factory() as db:
                rows = db.execute(
                    text("SELECT id, spent_usd, reserved_usd, usd_limit FROM budgets")
                ).all()
            samples[0] += 1
            for row in rows:
                if (
                    row.spent_usd > row.usd_limit
                    or row.spent_usd + row.reserved_usd > row.usd_limit
                ):
                    over.append(f"{row.id}: {row.spent_usd} + {row.reserved_usd} > {row.usd_limit}")
            time.sleep(0.02)

    threading.Thread(target=run, daemon=True).start()
    return samples


def test_twenty_long_replies_never_charge_past_the_limit(
    services: Services, session_factory: sessionmaker[Session]
) -> None:
    services.env.update(ENV)
    services.simulator({"latency_ms": 300, "replies": [{"content": LONG_REPLY}]})
    admin = client_for(services.api(), make_user(session_factory, admin=True))
    member = make_user(session_factory)
    client = client_for(str(admin.base_url), member)
    put = admin.put(
        "/v1/admin/budgets", json={"user_email": member.email, "usd": 0.005, "period": "total"}
    )
    assert put.status_code == 200, put.text
    budget_id = put.json()["id"]
    services.worker(concurrency=8)

    stop, over = threading.Event(), list[str]()
    samples = _sample(session_factory, stop, over)
    jobs = []
    for i in range(JOBS):
        session = client.post("/v1/sessions", json={}).json()["id"]
        posted = client.post(f"/v1/sessions/{session}/messages", json={"content": f"q{i}"})
        jobs.append(posted.json()["job_id"])
    finished = [
        wait_job(client, j, timeout_s=90, statuses=("succeeded", "failed", "budget_exhausted"))
        for j in jobs
    ]
    stop.set()

    assert samples[0] > 10 and over == [], over[:5]
    statuses = [j["status"] for j in finished]
    succeeded = statuses.count("succeeded")
    assert succeeded >= 1 and set(statuses) <= {"succeeded", "budget_exhausted"}, statuses
    # While calls were in flight the budget was full of reservations (exhausted);
    # once they settled with overruns, the next call is refused for the overrun.
    session = client.post("/v1/sessions", json={}).json()["id"]
    late = client.post(f"/v1/sessions/{session}/messages", json={"content": "late"})
    refused = wait_job(client, late.json()["job_id"], statuses=("budget_exhausted", "succeeded"))
    assert refused["status"] == "budget_exhausted" and "overrun" in refused["error"], refused

    with session_factory() as db:
        overruns = db.scalars(select(BudgetOverrun).where(BudgetOverrun.user_id == member.id)).all()
        charged = db.scalar(
            select(Job.cost_usd).where(Job.id == finished[statuses.index("succeeded")]["id"])
        )
    # Every answered call was charged 10 output tokens at most and left an overrun row.
    assert len(overruns) == succeeded
    assert all(o.reason in ("max_tokens", "limit") and o.overrun_usd > 0 for o in overruns)
    assert charged is not None and charged < Decimal("0.0011")

    budgets = admin.get("/v1/admin/budgets").json()["items"]
    (mine,) = [b for b in budgets if b["id"] == budget_id]
    assert Decimal(str(mine["spent_usd"])) <= LIMIT
    assert mine["overrun_at"] is not None and mine["overrun_usd"] > 0.09

    # Setting the budget again is the admin's answer: the overrun is cleared.
    again = admin.put(
        "/v1/admin/budgets", json={"user_email": member.email, "usd": 0.005, "period": "total"}
    )
    assert again.json()["overrun_at"] is None
