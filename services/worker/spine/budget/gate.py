"""What a turn does around each model call: pick the tier, reserve, and settle afterwards.

``admit`` reserves the call's worst case (the prompt by the server's tokenizer
where it has one, else ≈ characters / 3, plus ``max_tokens``, at the chosen
model's price) before the call; every admitted
call is settled, whatever happened to it: a failed or interrupted one by
``settle``, an answered one by the ledger write that records its reply
(``pending``), so spend, budgets and the job's usage change together. A
reservation is left behind only when that write never happens (a dead worker,
a lost database): the sweeper gives it back once the lease is gone, and the
unrecorded call is made, and charged, again.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sqlalchemy import Engine

from services.common.metrics import BUDGET_RESERVATIONS
from services.common.models import Job
from services.worker.llm.pricing import PriceBook, clamp_usage, worst_case_usd
from services.worker.llm.same_object import SameObject
from services.worker.llm.types import Usage, estimate_tokens_of_chars
from services.worker.settings import WorkerSettings
from services.worker.spine.budget.reservation import (
    Ask,
    Payer,
    PendingSettlement,
    Reservation,
    Settlement,
    reserve_budget,
    settle_pending,
)
from services.worker.spine.deps import RuntimeDeps
from services.worker.spine.events import JobEvents
from services.worker.spine.lease import Lease

USD_PLACES = Decimal("0.00000001")


def fast_tier_model(settings: WorkerSettings) -> str:
    """The model a call uses once a budget passed its soft threshold.

    The turn passes the router's fast-tier model instead; this is the fallback.
    """
    return settings.model_fast or settings.model


_TOOLS_CHARS = SameObject(lambda tools: len(json.dumps(tools or [])))


def prompt_tokens_upper_bound(messages: list[dict[str, Any]], tools: Any) -> int:
    """An estimate that errs high: every character of the serialised request counts."""
    chars = len(json.dumps(messages, default=str)) + _TOOLS_CHARS(tools)
    return estimate_tokens_of_chars(chars) + 1


def worst_case(prices: PriceBook, *, model: str, prompt_tokens: int, max_tokens: int) -> Decimal:
    usd = worst_case_usd(
        input_tokens=prompt_tokens, max_tokens=max_tokens, price=prices.price_for(model)
    )
    # Round up: a reservation must never be smaller than the cost it covers.
    return Decimal(str(usd)).quantize(USD_PLACES, rounding="ROUND_CEILING")


@dataclass(frozen=True)
class Admission:
    """An admitted call (``refused`` False) or the reason it may not start."""

    refused: bool
    model: str
    soft: bool
    reservation: Reservation
    message: str | None = None


class BudgetGate:
    """Budget checks of one job's model calls (one per turn runner)."""

    def __init__(
        self,
        *,
        writer: Engine,
        prices: PriceBook,
        settings: WorkerSettings,
        user_id: uuid.UUID,
        project_id: uuid.UUID | None,
        job_id: uuid.UUID | None,
        fence: int,
        events: JobEvents | None = None,
    ) -> None:
        self._writer = writer
        self._prices = prices
        self._settings = settings
        self._events = events
        self._soft_announced = False
        self.payer = Payer(user_id=user_id, project_id=project_id, job_id=job_id, fence=fence)

    @classmethod
    def for_job(cls, deps: RuntimeDeps, lease: Lease, job: Job, events: JobEvents) -> BudgetGate:
        return cls(
            writer=deps.writer,
            prices=deps.prices,
            settings=deps.settings,
            user_id=job.user_id,
            project_id=job.project_id,
            job_id=job.id,
            fence=lease.fence,
            events=events,
        )

    def admit(
        self,
        *,
        messages: list[dict[str, Any]],
        tools: Any,
        normal: str | None = None,
        fast: str | None = None,
        prompt_tokens: int | None = None,
    ) -> Admission:
        """Reserve the worst case of the call at ``normal``'s price, or at ``fast``'s
        past the soft threshold (the router's first candidates of each tier).

        ``prompt_tokens``: the prompt counted by the server's tokenizer
        (``llm/tokenize.py``); without it, the local upper bound."""
        settings = self._settings
        normal = normal or settings.model
        fast = fast or fast_tier_model(settings)
        prompt = prompt_tokens or prompt_tokens_upper_bound(messages, tools)
        max_tokens = settings.llm_max_tokens
        ask = Ask(
            usd=worst_case(self._prices, model=normal, prompt_tokens=prompt, max_tokens=max_tokens),
            tokens=prompt + max_tokens,
            fast_usd=worst_case(
                self._prices, model=fast, prompt_tokens=prompt, max_tokens=max_tokens
            ),
            fast_tokens=prompt + max_tokens,
        )
        held = reserve_budget(
            self._writer,
            payer=self.payer,
            ask=ask,
            soft_default=settings.budget_soft_threshold,
        )
        model = fast if held.soft else normal
        if not held.ok:
            BUDGET_RESERVATIONS.labels("refused").inc()
            return Admission(True, model, held.soft, held, exhausted_message(held))
        BUDGET_RESERVATIONS.labels("reserved" if held.budget_ids else "unbudgeted").inc()
        if held.soft and not self._soft_announced and self._events is not None:
            # Once per slice: the member sees why answers now come from the fast tier.
            self._soft_announced = True
            self._events.emit("budget", {"state": "soft_limit", "model": model})
        return Admission(False, model, held.soft, held)

    def settle(
        self,
        admission: Admission,
        *,
        model: str | None,
        usage: Usage | None = None,
        cost: Decimal = Decimal(0),
    ) -> None:
        """Settle an admitted call to its real cost; ``model`` None: no call was made."""
        settle_pending(self._writer, self.pending(admission, model=model, usage=usage, cost=cost))

    def pending(
        self,
        admission: Admission,
        *,
        model: str | None,
        usage: Usage | None = None,
        cost: Decimal = Decimal(0),
    ) -> PendingSettlement:
        """The settlement of an answered call, for the ledger write that records it."""
        usage = usage or Usage()
        charged = clamp_usage(usage, self._settings.llm_max_tokens)
        reported = None
        if model is not None and charged != usage:
            # The same price, the same rounding as ``cost``: only a clamp makes a difference.
            excess = self._prices.cost_usd(model, usage) - self._prices.cost_usd(model, charged)
            reported = cost + Decimal(str(round(excess, 8)))
        return PendingSettlement(
            payer=self.payer,
            reservation=admission.reservation,
            settlement=Settlement(
                cost_usd=cost,
                input_tokens=charged.input_tokens,
                output_tokens=charged.output_tokens,
                cached_tokens=charged.cached_tokens,
                model=model,
                reported_usd=reported,
                reported_output_tokens=usage.output_tokens,
                estimated=usage.estimated,
            ),
        )


def exhausted_message(held: Reservation) -> str:
    scopes = " and ".join(sorted(set(held.refused_by))) or "a"
    if held.overrun_by:
        over = " and ".join(sorted(set(held.overrun_by)))
        return (
            f"budget exhausted (overrun): the {over} budget was reported a cost beyond what a call "
            "could be charged (a reply longer than max_tokens, or a charge cut at the "
            "limit; see the budget's overruns in the admin page); further calls are "
            "refused and the job is paused until an admin sets the budget again "
            "(leaflab admin budget set … / PUT /v1/admin/budgets)"
        )
    return (
        f"budget exhausted: the {scopes} budget cannot cover the next model call "
        f"(worst case ${held.usd:.4f}, {held.tokens} tokens); the job is paused and "
        "resumes where it stopped when an admin raises the budget "
        "(leaflab admin budget set … / PUT /v1/admin/budgets)"
    )
