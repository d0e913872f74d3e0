"""Budget invariant under load: spend + reservations never pass a limit, across processes.

Two processes × 16 threads make 200 reservations against budgets that fit
exactly k worst-case calls (each settled call uses its whole worst case), while
a sampler reads ``spent + reserved`` of every budget row throughout.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import BudgetReservation, SpendRecord
from tests.conftest import Stack
from tests.fixtures.builders import make_project, make_user
from tests.worker.budget.builders import budget_row, make_budget

ROOT = Path(__file__).resolve().parents[3]
CALLS = 200
PROCESSES = 2
THREADS = 16
WORST_USD = "0.010000"
WORST_TOKENS = 1000


@dataclass
class Peak:
    over: list[str]
    samples: int = 0


def _sample(factory: sessionmaker[Session], stop: threading.Event, peak: Peak) -> None:
    while not stop.is_set():
        with factory() as db:
            rows = db.execute(
                text(
                    "SELECT id, spent_usd + reserved_usd AS usd, usd_limit,"
                    " spent_tokens + reserved_tokens AS tokens, token_limit FROM budgets"
                )
            ).all()
        peak.samples += 1
        for row in rows:
            if row.usd > row.usd_limit or (
                row.token_limit is not None and row.tokens > row.token_limit
            ):
                peak.over.append(f"{row.id}: ${row.usd} > ${row.usd_limit} / {row.tokens}")


def _load(stack: Stack, user_id: uuid.UUID, project_id: uuid.UUID | None) -> list[dict]:
    spec = {
        "database_url": stack.database_url,
        "user_id": str(user_id),
        "project_id": str(project_id) if project_id else None,
        "usd": WORST_USD,
        "tokens": WORST_TOKENS,
        "calls": CALLS // PROCESSES,
        "threads": THREADS,
        "hold_s": 0.005,
        "start_at": time.time() + 2.0,
    }
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.worker.budget.reserve_load", json.dumps(spec)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(PROCESSES)
    ]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def _project_id(factory: sessionmaker[Session], name: str) -> uuid.UUID:
    from services.common.models import Project

    with factory() as db:
        return db.scalar(select(Project.id).where(Project.name == name))  # type: ignore[return-value]


class TestBudgetInvariantUnderLoad:
    @pytest.mark.parametrize(
        ("user_calls", "project_calls"),
        [(37, None), (1000, 23), (19, 1000)],
        ids=["user-only", "project-tighter", "user-tighter"],
    )
    def test_exactly_k_calls_start_and_spend_never_passes_the_limit(
        self,
        stack: Stack,
        session_factory: sessionmaker[Session],
        user_calls: int,
        project_calls: int | None,
    ) -> None:
        user = make_user(session_factory)
        project_id = None
        budgets = []
        worst = Decimal(WORST_USD)
        budgets.append(make_budget(session_factory, user_id=user.id, usd=str(worst * user_calls)))
        if project_calls is not None:
            project_id = _project_id(session_factory, make_project(session_factory, user))
            budgets.append(
                make_budget(
                    session_factory,
                    project_id=project_id,
                    usd=str(worst * 10_000),
                    tokens=WORST_TOKENS * project_calls,  # the project's cap is in tokens
                )
            )
        k = min(user_calls, project_calls or user_calls)

        stop, peak = threading.Event(), Peak(over=[])
        sampler = threading.Thread(target=_sample, args=(session_factory, stop, peak))
        sampler.start()
        try:
            results = _load(stack, user.id, project_id)
        finally:
            stop.set()
            sampler.join()

        assert [e for r in results for e in r["errors"]] == []
        assert sum(r["ok"] for r in results) == k
        assert sum(r["refused"] for r in results) == CALLS - k
        assert peak.samples > 10, "the sampler must have watched the run"
        assert peak.over == [], peak.over[:5]
        for budget_id in budgets:
            row = budget_row(session_factory, budget_id)
            assert row.reserved_usd == 0 and row.reserved_tokens == 0  # idle: all given back
        assert budget_row(session_factory, budgets[0]).spent_usd == worst * k
        with session_factory() as db:
            assert db.scalar(select(func.count()).select_from(BudgetReservation)) == 0
            spend_rows = db.scalar(
                select(func.count()).select_from(SpendRecord).where(SpendRecord.user_id == user.id)
            )
        assert spend_rows == k  # one spend row per settled call
