"""The cross-process contracts (services/common/contracts/): statuses, events, their JS.

What a watcher, the sweeper and the browser decide from them, checked on the
outcome: which statuses end a job, which events a publisher lets through, and
that the files the pages load are what the contracts render today.
"""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any, get_args

import pytest
from redis import Redis

from services.common.contracts.events import EVENT_TYPES, parse_event
from services.common.contracts.keys import job_stream
from services.common.contracts.statuses import (
    ACTIVE,
    DOCUMENT_IN_FLIGHT,
    DOCUMENT_INGESTED,
    DOCUMENT_SETTLED,
    EXECUTION_DONE,
    STEP_DONE,
    TERMINAL,
    DocumentStatus,
    ExecutionStatus,
    JobStatus,
    StepStatus,
    sql_list,
)
from services.common.contracts.write_js import rendered
from services.common.events import EventPublisher, InvalidEvent, decode_entry
from services.common.job_states import JOB_STATUSES, JobStatusName

# What every emitter sends today (one of each), as workers and the API publish them.
PUBLISHED: list[tuple[str, dict[str, Any]]] = [
    ("status", {"status": "running"}),
    ("status", {"status": "running", "progress": {"done": 1, "total": 3, "succeeded": 1}}),
    ("status", {"status": "waiting_model", "message": "every endpoint is down"}),
    ("status", {"status": "budget_exhausted", "error": "spent"}),
    ("status", {"status": "failed", "error": "boom"}),
    ("token", {"text": "Hel"}),
    ("model", {"model": "gemma-3-270m"}),
    ("model_retry", {"attempt": 1, "error": "stream stalled", "wait_s": 0.5}),
    ("tool_start", {"tool_call_id": "c1", "name": "python"}),
    ("tool_end", {"tool_call_id": "c1", "name": "python", "status": "succeeded", "preview": "4"}),
    ("todo", {"items": [{"content": "read", "status": "pending"}]}),
    ("progress", {"stage": "read", "papers_found": 3, "papers_read": 1, "cost_usd": 0.01}),
    ("approval", {"approval_id": "a1", "status": "pending", "tool": "write_file"}),
    ("approval", {"approval_id": "a1", "status": "approved", "decision": "approve"}),
    ("budget", {"state": "soft_limit", "model": "small"}),
    ("budget", {"state": "exhausted", "overrun": False, "message": "raise it"}),
    (
        "compression",
        {"round": 0, "layer": "window", "changed": 2, "before_tokens": 9, "after_tokens": 5},
    ),
    ("prompt_switch", {"to": "v2"}),
    ("mcp_unavailable", {"server": "files", "tool": "read", "reason": "crashed"}),
    ("memory_proposal", {"proposal_id": "p1", "kind": "fact"}),
    ("access_revoked", {"reason": "removed from the project"}),
    (
        "sandbox_start",
        {"backend": "docker", "sandbox_id": "s1", "warm": False, "tool_call_id": "c1"},
    ),
    ("sandbox_end", {"sandbox_id": "s1", "exit_code": None, "killed_reason": "timeout"}),
    ("sandbox_kill", {"sandbox_id": "s1", "reason": "timeout"}),
    ("sandbox_timeout", {"sandbox_id": "s1", "timeout_s": 30}),
    ("sandbox_cleanup", {"sandbox_id": "s1", "removed": True}),
    ("final", {"status": "succeeded", "result": {"content": "4"}, "error": None}),
]
MALFORMED: list[tuple[str, dict[str, Any]]] = [
    ("stauts", {"status": "running"}),  # an unknown (misspelt) type
    ("status", {"status": "finished"}),  # not a job status
    ("token", {"text": 3}),  # a declared field of the wrong type
    ("final", {}),  # its status missing
    ("status", {"status": "running", "type": "final"}),  # data naming another type
]


class TestStatuses:
    def test_terminal_and_active_split_every_status(self) -> None:
        assert {str(s) for s in TERMINAL} == {"succeeded", "failed", "cancelled"}
        assert TERMINAL | ACTIVE == set(JobStatus) and not TERMINAL & ACTIVE

    def test_a_plain_string_status_is_found_in_the_sets(self) -> None:
        assert "failed" in TERMINAL and "running" in ACTIVE and "running" not in TERMINAL

    def test_the_api_literal_spells_the_same_statuses(self) -> None:
        assert get_args(JobStatusName) == JOB_STATUSES == tuple(s.value for s in JobStatus)

    def test_sql_list_is_quoted_and_stable(self) -> None:
        assert sql_list(TERMINAL) == "'cancelled', 'failed', 'succeeded'"


class TestOtherVocabularies:
    def test_step_done_is_every_step_status_but_running_and_waiting(self) -> None:
        # A resumed job re-runs only a running step (and reports it interrupted); a
        # waiting one (a subagent's) is read back through its child job.
        assert frozenset(StepStatus) - STEP_DONE == {StepStatus.RUNNING, StepStatus.WAITING}
        assert "interrupted" in STEP_DONE

    def test_execution_done_is_every_execution_status_but_running(self) -> None:
        assert frozenset(ExecutionStatus) - EXECUTION_DONE == {ExecutionStatus.RUNNING}

    def test_document_sets(self) -> None:
        assert DOCUMENT_IN_FLIGHT == {"queued", "parsing", "embedding"}
        assert DOCUMENT_INGESTED <= DOCUMENT_SETTLED
        assert DOCUMENT_SETTLED == {"ready", "failed", "metadata_only"}
        assert sql_list(DOCUMENT_SETTLED) == "'failed', 'metadata_only', 'ready'"
        assert DocumentStatus.QUEUED == JobStatus.QUEUED  # shared words, separate names


class TestEvents:
    @pytest.mark.parametrize(("kind", "data"), PUBLISHED, ids=[k for k, _ in PUBLISHED])
    def test_every_emitted_shape_parses(self, kind: str, data: dict[str, Any]) -> None:
        assert parse_event(kind, data).type == kind

    @pytest.mark.parametrize(("kind", "data"), MALFORMED, ids=[k for k, _ in MALFORMED])
    def test_a_malformed_event_is_refused(self, kind: str, data: dict[str, Any]) -> None:
        with pytest.raises(ValueError):
            parse_event(kind, data)

    def test_extra_fields_survive_parsing(self) -> None:
        event = parse_event("sandbox_start", {"sandbox_id": "s", "backend": "bwrap", "warm": True})
        assert event.data()["warm"] is True

    def test_every_type_has_a_published_example(self) -> None:
        assert {k for k, _ in PUBLISHED} | {"events_lost"} == set(EVENT_TYPES)


class TestGeneratedJs:
    def test_the_committed_files_are_what_the_contracts_render(self) -> None:
        stale = [p.name for p, text in rendered().items() if p.read_text(encoding="utf-8") != text]
        assert not stale, f"{stale} stale: run python -m services.common.contracts.write_js"

    def test_the_schema_is_the_union_on_type(self) -> None:
        (schema,) = [json.loads(t) for p, t in rendered().items() if p.name == "events.schema.json"]
        assert set(schema["discriminator"]["mapping"]) == set(EVENT_TYPES)


class TestPublisher:
    def _stream(self, redis: Redis, job_id: str) -> list[str]:
        return [decode_entry(i, f)["type"] for i, f in redis.xrange(job_stream(job_id))]

    def test_strict_refuses_a_malformed_event_and_publishes_nothing(self, redis: Redis) -> None:
        job_id = str(uuid.uuid4())
        with pytest.raises(InvalidEvent):
            EventPublisher(redis, strict=True).publish_many(
                job_id, [("status", {"status": "running"}), ("stauts", {})]
            )
        assert self._stream(redis, job_id) == []

    def test_lenient_logs_and_still_publishes(
        self, redis: Redis, caplog: pytest.LogCaptureFixture
    ) -> None:
        job_id = str(uuid.uuid4())
        with caplog.at_level(logging.WARNING, logger="services.common.events"):
            EventPublisher(redis, strict=False).publish(job_id, "stauts", {"status": "running"})
        assert self._stream(redis, job_id) == ["stauts"]
        assert "breaks its contract" in caplog.text
        redis.delete(job_stream(job_id))

    def test_strict_is_the_default_under_the_test_environment(
        self, redis: Redis, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("LEAFLAB_ENV", "test")
        with pytest.raises(InvalidEvent):
            EventPublisher(redis).publish(str(uuid.uuid4()), "token", {"text": 3})
        monkeypatch.setenv("LEAFLAB_ENV", "prod")
        job_id = str(uuid.uuid4())
        assert EventPublisher(redis).publish(job_id, "token", {"text": 3}) is not None
        redis.delete(job_stream(job_id))
