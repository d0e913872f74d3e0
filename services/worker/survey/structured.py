"""One structured model call of a stage: budget gate, routed call, schema check, one repair.

Spend goes through the same gate and call path as a turn's model calls
(``spine/model_call.py``): the worst case is reserved before the call and
settled after it.

Replies are read tolerantly before they are judged (a ```json fence, text around
the object, a raw newline or tab inside a string: what small models and servers
without schema-constrained decoding produce), then validated against the schema.
A reply that still fails is sent back once with the problem; a second bad reply
fails the stage with it. A reply cut at its token limit (or the stream's deadline)
is reported as truncated, never as a JSON error, and its repair asks for less: in
its words, and in the bounds it is sent with (fitted to the density the cut reply
showed, ``reply_fit.repair_density``).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import jsonschema

from services.worker.llm.errors import ModelError
from services.worker.llm.types import ModelResponse
from services.worker.spine.budget.gate import Admission, BudgetGate
from services.worker.spine.deps import RuntimeDeps
from services.worker.spine.model_call import call_model
from services.worker.survey.reply_fit import CHARS_PER_TOKEN, fit_to_reply, repair_density
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
    # When the unit's work began: its step is written once, after the calls.
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))


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
        check = reply_check(ask.schema, lenient_enums=ask.lenient_enums)
        max_tokens = self.deps.settings.llm_max_tokens

        def send(sent: list[dict[str, Any]], chars_per_token: float) -> ModelResponse:
            # Sent with bounds that fit the reply's tokens, checked without them.
            fitted = fit_to_reply(
                ask.schema, max_tokens=max_tokens, chars_per_token=chars_per_token
            )
            return self._call(ask, fitted, sent, spent)

        data = answer_with_one_repair(ask.name, check, messages, send, max_tokens=max_tokens)
        return data, spent

    def _call(
        self, ask: Ask, schema: dict[str, Any], messages: list[dict[str, Any]], spent: Spent
    ) -> ModelResponse:
        router = self.deps.router
        assert router is not None  # RuntimeDeps builds one
        fmt = response_format(ask.name, schema)
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
        return resp


def _ignore(_: str) -> None:
    """Structured replies are not streamed to watchers: progress events say more."""


def answer_with_one_repair(
    name: str,
    schema: dict[str, Any],
    messages: list[dict[str, Any]],
    call: Callable[[list[dict[str, Any]], float], ModelResponse],
    *,
    max_tokens: int,
) -> dict[str, Any]:
    """The schema-valid object of ``call(messages, chars_per_token)``'s reply, after at
    most one repair call that shows the model its reply and what is wrong with it;
    raises StageFailed. ``chars_per_token`` is the density the call fits its bounds
    to: the prose default first, the cut reply's own (lower) for the repair of a
    truncated one. ``max_tokens`` is the limit the calls are sent with."""
    reply = call(messages, CHARS_PER_TOKEN)
    data, problem = _judge(reply, schema, max_tokens)
    if problem is None:
        return data
    repair = [
        *messages,
        {"role": "assistant", "content": reply.content or ""},
        {"role": "user", "content": _repair_request(name, problem, reply)},
    ]
    density = CHARS_PER_TOKEN
    if reply.truncated:
        density = repair_density(reply.content or "", _cut_at(reply, max_tokens))
    reply = call(repair, density)
    data, problem = _judge(reply, schema, max_tokens)
    if problem is None:
        return data
    if reply.truncated:
        raise StageFailed(f"{name}: {problem}, even after one repair asking for less")
    raise StageFailed(
        f"{name}: the model's reply is not valid JSON for the schema after one repair ({problem})"
    )


def _judge(
    reply: ModelResponse, schema: dict[str, Any], max_tokens: int
) -> tuple[dict[str, Any], str | None]:
    """The reply's object, or what is wrong with it (a cut reply is said to be cut)."""
    data, problem = _parse(reply.content or "", schema)
    if problem is None or not reply.truncated:
        return data, problem
    return {}, f"the reply was truncated at {_cut_at(reply, max_tokens)} tokens"


def _cut_at(reply: ModelResponse, max_tokens: int) -> int:
    # A stream cut at its deadline ends where its tokens stopped; "length" at the limit.
    return max_tokens if reply.finish_reason == "length" else reply.usage.output_tokens


def _repair_request(name: str, problem: str, reply: ModelResponse) -> str:
    if reply.truncated:
        return (
            f"That reply for the schema {name} was cut off: {problem}. Answer again with "
            "a shorter JSON object that fits (fewer or shorter items), and only the object."
        )
    return (
        f"That reply is not valid for the schema {name}: {problem}. "
        "Answer again with only the JSON object."
    )


def _parse(content: str, schema: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    try:
        data = parse_json_object(content)
    except ValueError as exc:
        return {}, str(exc)
    try:
        jsonschema.validate(data, schema)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        return {}, f"at {where}: {exc.message[:300]}"
    return data, None


_FENCED = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)


def parse_json_object(text: str) -> dict[str, Any]:
    """The JSON object in a model's reply, read tolerantly: inside a ``` fence or
    with text around it, raw control characters (a newline, a tab) inside strings
    accepted. Raises ValueError saying why no object was found."""
    stripped = text.strip()
    if not stripped:
        raise ValueError("the reply is empty")
    candidates = [m.group(1).strip() for m in _FENCED.finditer(stripped)] + [stripped]
    first_error: json.JSONDecodeError | None = None
    for candidate in candidates:
        try:
            data = json.loads(candidate, strict=False)
        except json.JSONDecodeError as exc:
            first_error = first_error or exc
            continue
        if isinstance(data, dict):
            return data
    found = _first_object(stripped)
    if found is not None:
        return found
    if first_error is None:
        raise ValueError("the reply is not a JSON object")
    raise ValueError(f"invalid JSON: {first_error}")


def _first_object(text: str) -> dict[str, Any] | None:
    """The first JSON object that starts at some ``{`` of ``text`` (text around it ignored)."""
    decoder = json.JSONDecoder(strict=False)
    start = text.find("{")
    while start != -1:
        try:
            data, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict):
            return data
        start = text.find("{", start + 1)
    return None


def reply_check(schema: dict[str, Any], *, lenient_enums: bool) -> dict[str, Any]:
    """The schema a reply is checked against. ``minItems``/``minLength`` are sent so
    that a grammar-following server cannot answer an empty list or string, but like
    the upper bounds they are never a new way to fail (an empty outline still gets
    the stage's fallback on a server that decodes freely); with ``lenient_enums`` a
    value need not be one its enum lists either."""
    dropped = _FLOORS | {"enum"} if lenient_enums else _FLOORS
    checked: dict[str, Any] = _without(schema, dropped)
    return checked


_FLOORS = frozenset({"minItems", "minLength"})


def _without(schema: Any, keywords: frozenset[str]) -> Any:
    """``schema`` with the given keywords removed at every level."""
    if isinstance(schema, dict):
        return {k: _without(v, keywords) for k, v in schema.items() if k not in keywords}
    if isinstance(schema, list):
        return [_without(v, keywords) for v in schema]
    return schema
