"""A load process: many threads reserve (and settle) against the same budgets.

Run as ``python -m tests.worker.budget.reserve_load SPEC_JSON``; prints one JSON
line ``{"ok": n, "refused": m, "errors": [...]}``. The test starts two of these
processes so the reservations really race across processes and connections.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import uuid
from decimal import Decimal
from typing import Any

from services.common.db import build_engine
from services.worker.spine.budget.reservation import (
    Ask,
    Payer,
    Settlement,
    reserve_budget,
    settle_budget,
)


def run(spec: dict[str, Any]) -> dict[str, Any]:
    threads = int(spec["threads"])
    engine = build_engine(spec["database_url"], pool_size=threads)
    writer = engine.execution_options(isolation_level="AUTOCOMMIT")
    payer = Payer(
        user_id=uuid.UUID(spec["user_id"]),
        project_id=uuid.UUID(spec["project_id"]) if spec.get("project_id") else None,
        job_id=None,
        fence=1,
    )
    usd = Decimal(spec["usd"])
    ask = Ask(usd=usd, tokens=int(spec["tokens"]), fast_usd=usd, fast_tokens=int(spec["tokens"]))
    remaining = [int(spec["calls"])]
    lock = threading.Lock()
    counts = {"ok": 0, "refused": 0}
    errors: list[str] = []

    def caller() -> None:
        while True:
            with lock:
                if remaining[0] <= 0:
                    return
                remaining[0] -= 1
            try:
                held = reserve_budget(writer, payer=payer, ask=ask, soft_default=0.8)
                if not held.ok:
                    with lock:
                        counts["refused"] += 1
                    continue
                time.sleep(float(spec["hold_s"]))  # the model call
                # Every call uses its whole worst case: the budget fits exactly k calls.
                settle_budget(
                    writer,
                    payer=payer,
                    reservation=held,
                    settlement=Settlement(
                        cost_usd=usd, input_tokens=int(spec["tokens"]), model="load"
                    ),
                )
                with lock:
                    counts["ok"] += 1
            except Exception as exc:  # reported to the test, which fails on any
                with lock:
                    errors.append(repr(exc)[:500])

    # Start together: the parent gives a wall-clock instant.
    time.sleep(max(0.0, float(spec["start_at"]) - time.time()))
    pool = [threading.Thread(target=caller) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    engine.dispose()
    return {**counts, "errors": errors}


if __name__ == "__main__":
    print(json.dumps(run(json.loads(sys.argv[1]))))
