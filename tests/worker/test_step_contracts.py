"""The ledger's llm and tool steps store exactly what services/common/contracts/steps.py
declares.

A turn runs against the model simulator (real API, worker and Postgres): the llm steps'
``result`` (a reply with a tool call, then the answer) and a failed call's ``error``
come back from ``job_steps`` with exactly the keys of their TypedDict, nested ones
included, each value of its declared type; the job's result has only keys
``AnswerResult`` declares; a tool call's ``result`` (succeeded) and ``error`` (failed)
have exactly the keys of ``ToolStepResult`` / ``ToolStepError``; and the accessors read
the stored steps back. A key renamed
in a writer but not in the contract fails here (and in mypy).
"""

from __future__ import annotations

import types
import uuid
from typing import Any, Union, get_args, get_origin, get_type_hints, is_typeddict

import httpx
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts.steps import (
    AnswerResult,
    LlmStepResult,
    LlmUsage,
    ModelCallError,
    ToolCallRecord,
    ToolStepError,
    ToolStepResult,
)
from services.worker.spine.ledger import (
    llm_key,
    llm_step_error,
    llm_step_result,
    load_steps,
    tool_key,
    tool_step_error,
    tool_step_result,
)
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import Services

TODO_CALL = {"name": "todo", "arguments": {"items": [{"content": "read", "status": "pending"}]}}


def _keys(td: Any) -> set[str]:
    return set(td.__required_keys__) | set(td.__optional_keys__)


def _problems(value: Any, hint: Any, where: str) -> list[str]:
    """Where ``value`` (JSON read back) departs from ``hint`` (a TypedDict's field type):
    a key missing or extra, or a value of another type."""
    if is_typeddict(hint):
        if not isinstance(value, dict):
            return [f"{where}: {value!r} is not an object"]
        found = [f"{where}: keys {sorted(value)} != declared {sorted(hint.__required_keys__)}"]
        if not set(hint.__required_keys__) <= set(value) <= _keys(hint):
            return found
        hints = get_type_hints(hint)
        return [p for k, v in value.items() for p in _problems(v, hints[k], f"{where}.{k}")]
    if hint is Any:
        return []
    origin = get_origin(hint)
    if origin is dict:
        return [] if isinstance(value, dict) else [f"{where}: {value!r} is not an object"]
    if origin in (Union, types.UnionType):
        options = [_problems(value, arm, where) for arm in get_args(hint)]
        return [] if any(not o for o in options) else options[0]
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: {value!r} is not a list"]
        (item,) = get_args(hint)
        return [p for i, v in enumerate(value) for p in _problems(v, item, f"{where}[{i}]")]
    if hint is type(None):
        return [] if value is None else [f"{where}: {value!r} is not null"]
    ok = isinstance(value, hint) and (hint is bool or not isinstance(value, bool))
    return [] if ok else [f"{where}: {value!r} is not {hint.__name__}"]


def _turn(client: httpx.Client, sim: Any, replies: list[dict[str, Any]]) -> str:
    session = client.post("/v1/sessions", json={}).json()["id"]
    sim.set_script(session, {"replies": replies})
    job = client.post(f"/v1/sessions/{session}/messages", json={"content": "go"}).json()
    return str(job["job_id"])


def _stored(factory: sessionmaker[Session], job_id: str, kind: str = "llm") -> list[Any]:
    with factory() as db:
        return list(
            db.execute(
                text(
                    "SELECT step_key, status, result, error FROM job_steps "
                    "WHERE job_id = :id AND kind = :kind ORDER BY seq"
                ),
                {"id": uuid.UUID(job_id), "kind": kind},
            )
        )


def test_llm_steps_round_trip_with_exactly_the_declared_keys(
    services: Services, session_factory: sessionmaker[Session]
) -> None:
    sim = services.simulator()
    client = client_for(services.api(), make_user(session_factory))
    services.worker()
    answered = _turn(client, sim, [{"tool_calls": [TODO_CALL]}, {"content": "done"}])
    refused = _turn(client, sim, [{"error": 400, "message": "bad parameter"}])
    bad_call = {"name": "todo", "arguments": {"items": "not a list"}}
    tool_failed = _turn(client, sim, [{"tool_calls": [bad_call]}, {"content": "ok"}])

    job = wait_job(client, answered, timeout_s=60)
    assert job["status"] == "succeeded", job
    assert set(job["result"]) <= _keys(AnswerResult) and job["result"]["content"] == "done"
    steps = _stored(session_factory, answered)
    assert [(s.step_key, s.status) for s in steps] == [
        ("llm:0", "succeeded"),
        ("llm:1", "succeeded"),
    ]
    for step in steps:
        assert step.error is None
        assert _problems(step.result, LlmStepResult, step.step_key) == []
        assert set(step.result) == _keys(LlmStepResult)
        assert set(step.result["usage"]) == _keys(LlmUsage)
    (call,) = steps[0].result["tool_calls"]
    assert set(call) == _keys(ToolCallRecord) and call["name"] == "todo"
    assert steps[1].result["tool_calls"] == [] and steps[1].result["content"] == "done"

    failed = wait_job(client, refused, timeout_s=60)
    assert failed["status"] == "failed" and "bad parameter" in failed["error"], failed
    (step,) = _stored(session_factory, refused)
    assert step.status == "failed" and step.result is None
    assert _problems(step.error, ModelCallError, "error") == []
    assert set(step.error) == _keys(ModelCallError)
    assert step.error["code"] == "model_error" and step.error["status"] == 400
    assert step.error["retryable"] is False and "bad parameter" in step.error["message"]

    # The accessors the turn's planner reads through give back what was stored.
    with session_factory() as db:
        ledger = load_steps(db, uuid.UUID(answered))
        first = llm_step_result(ledger[llm_key(0)])
        assert first is not None and first["tool_calls"] == [call]
        assert first == steps[0].result
        error = llm_step_error(load_steps(db, uuid.UUID(refused))[llm_key(0)])
        assert error == step.error

    # Tool steps: a succeeded call's result and a failed call's error, as declared.
    (done,) = _stored(session_factory, answered, kind="tool")
    assert done.status == "succeeded" and done.error is None
    assert _problems(done.result, ToolStepResult, "tool result") == []
    assert set(done.result) == _keys(ToolStepResult) and done.result["content"]
    assert wait_job(client, tool_failed, timeout_s=60)["status"] == "succeeded"
    (bad,) = _stored(session_factory, tool_failed, kind="tool")
    assert bad.status == "failed" and bad.result is None
    assert _problems(bad.error, ToolStepError, "tool error") == []
    assert set(bad.error) == _keys(ToolStepError) and bad.error["message"]
    with session_factory() as db:
        ran = load_steps(db, uuid.UUID(answered))[tool_key(0, call["id"])]
        assert tool_step_result(ran) == done.result
        refused_tool = load_steps(db, uuid.UUID(tool_failed))
        (bad_step,) = [v for k, v in refused_tool.items() if k.startswith("tool:")]
        assert tool_step_error(bad_step) == bad.error


def test_the_checker_finds_a_missing_extra_or_mistyped_key() -> None:
    usage = {"input_tokens": 1, "output_tokens": 2, "cached_tokens": 0, "estimated": False}
    assert _problems(usage, LlmUsage, "u") == []
    assert _problems({**usage, "cached": 0}, LlmUsage, "u")
    assert _problems({k: v for k, v in usage.items() if k != "estimated"}, LlmUsage, "u")
    assert _problems({**usage, "estimated": 0}, LlmUsage, "u")
    assert _problems({**usage, "input_tokens": True}, LlmUsage, "u")
    assert _problems({"content": "x"}, AnswerResult, "a") == []
    assert _problems({"content": "x", "notice": 3}, AnswerResult, "a")
