"""One structured model call of a stage: budget gate, routed call, schema check, one repair.

Spend goes through the same gate and call path as a turn's model calls
(``runtime/model_call.py``): the worst case is reserved before the call and
settled after it. A reply that is not valid JSON for the schema is sent back
once with the error; a second bad reply fails the stage with that error.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import jsonschema

from services.worker.budget.gate import Admission, BudgetGate
from services.worker.llm.errors import ModelError
from services.worker.runtime.deps import RuntimeDeps
from services.worker.runtime.model_call import call_model
from services.worker.survey.schemas import response_format

SCENE = "survey_writing"  # routed to the flagship tier unless configured otherwise
FAST_TIER = "fast"


class StageFailed(Exception):
    """A stage cannot go on (the model failed, or answered invalid JSON twice)."""


class BudgetRefused(Exception):
    """The budget cannot cover the next call: the job pauses (nothing was sent)."""

    def __init__(self, admission: Admission) -> None:
        super().__init__(admission.message or "budget exhausted")
        self.admission = admission


@dataclass
class Spent:
    """What the calls of one unit of work used, recorded with its ledger step."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: Decimal = Decimal(0)
    calls: int = 0
    models: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Ask:
    """One structured request: what to send and what shape must come back."""

    name: str
    schema: dict[str, Any]
    system: str
    user: str
    conversation_key: str
    # Checked without its enums: a section may cite a key outside the papers in hand,
    # and it is the verify stage that catches it (and lists it under "Needs checking").
    lenient_enums: bool = False


class StructuredCaller:
    """Structured calls for one job; safe to share between a stage's threads."""

    def __init__(
        self,
        deps: RuntimeDeps,
        budget: BudgetGate,
        payer: tuple[uuid.UUID, uuid.UUID | None],
    ) -> None:
        self.deps = deps
        self.budget = budget
        self.payer = payer

    def ask(self, ask: Ask) -> tuple[dict[str, Any], Spent]:
        """The parsed, schema-valid reply and what it cost.

        Raises BudgetRefused (pause the job) or StageFailed (fail it).
        """
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": ask.system},
            {"role": "user", "content": ask.user},
        ]
        spent = Spent()
        check = _without_enums(ask.schema) if ask.lenient_enums else ask.schema
        content = self._call(ask, messages, spent)
        data, problem = _parse(content, check)
        if problem is None:
            return data, spent
        # One repair: the model sees its reply and what is wrong with it.
        messages += [
            {"role": "assistant", "content": content},
            {
                "role": "user",
                "content": f"That reply is not valid for the schema {ask.name}: {problem}. "
                "Answer again with only the JSON object.",
            },
        ]
        content = self._call(ask, messages, spent)
        data, problem = _parse(content, check)
        if problem is None:
            return data, spent
        raise StageFailed(
            f"{ask.name}: the model's reply is not valid JSON for the schema "
            f"after one repair ({problem})"
        )

    def _call(self, ask: Ask, messages: list[dict[str, Any]], spent: Spent) -> str:
        router = self.deps.router
        assert router is not None  # RuntimeDeps builds one
        fmt = response_format(ask.name, ask.schema)
        admission = self.budget.admit(
            messages=messages,
            tools=[fmt],
            normal=router.primary(SCENE).model,
            fast=router.primary(SCENE, FAST_TIER).model,
        )
        if admission.refused:
            raise BudgetRefused(admission)
        request: dict[str, Any] = {"model": admission.model, "schema": ask.name}
        try:
            resp, model, cost = call_model(
                deps=self.deps,
                router=router,
                budget=self.budget,
                admission=admission,
                scene=SCENE,
                tier_override=FAST_TIER if admission.soft else None,
                messages=messages,
                tools=None,
                conversation_key=ask.conversation_key,
                on_token=_ignore,
                request=request,
                payer=self.payer,
                response_format=fmt,
            )
        except ModelError as err:
            raise StageFailed(f"{ask.name}: model call failed: {err}") from err
        spent.calls += 1
        spent.input_tokens += resp.usage.input_tokens
        spent.output_tokens += resp.usage.output_tokens
        spent.cached_tokens += resp.usage.cached_tokens
        spent.cost_usd += cost
        spent.models.append(model)
        return resp.content or ""


def _ignore(_: str) -> None:
    """Structured replies are not streamed to watchers: progress events say more."""


def _parse(content: str, schema: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    try:
        data = json.loads(_strip_fence(content))
    except json.JSONDecodeError as exc:
        return {}, f"invalid JSON: {exc}"
    if not isinstance(data, dict):
        return {}, "the reply is not a JSON object"
    try:
        jsonschema.validate(data, schema)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        return {}, f"at {where}: {exc.message[:300]}"
    return data, None


def _without_enums(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _without_enums(v) for k, v in schema.items() if k != "enum"}
    if isinstance(schema, list):
        return [_without_enums(v) for v in schema]
    return schema


def _strip_fence(content: str) -> str:
    # Some models wrap JSON in a ``` fence even when asked for JSON only.
    text = content.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0]
    return text
