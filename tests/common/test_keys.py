"""The Redis key names (services/common/contracts/keys.py), pinned as literals.

A deployed Redis and a rolling upgrade (old and new processes side by side) rely on
every process spelling a key as before: a renamed key would orphan live job streams,
sessions and breakers, so each value is written out here rather than derived.
"""

from __future__ import annotations

import uuid

from services.common.contracts import keys

ID = uuid.UUID("12345678-1234-5678-1234-567812345678")


def test_stream_names_are_unchanged() -> None:
    assert keys.job_stream("j1") == "leaflab:job:j1"
    assert keys.document_stream("d1") == "leaflab:library:document:d1"


def test_routing_keys_are_unchanged() -> None:
    assert keys.breaker("http://m:8000/v1", "qwen|7b") == "leaflab:breaker:http://m:8000/v1|qwen|7b"
    assert keys.split_breaker(keys.breaker("http://m:8000/v1", "qwen")) == (
        "http://m:8000/v1",
        "qwen",
    )
    assert keys.llm_slots("local") == [
        "leaflab:llm_slots:local:holders",
        "leaflab:llm_slots:local:queue",
        "leaflab:llm_slots:local:seen",
        "leaflab:llm_slots:local:seq",
    ]
    assert keys.MODEL_CAPS_INDEX == "leaflab:model_caps:index"
    assert keys.MODEL_CAPS_REFRESH == "leaflab:model_caps:refresh"
    assert keys.model_caps_record("local", "m", "h1") == "leaflab:model_caps:rec:local|m|h1"
    assert keys.model_caps_lock("h1") == "leaflab:model_caps:lock:h1"


def test_worker_and_sandbox_keys_are_unchanged() -> None:
    assert keys.SWEEPER_LOCK == "leaflab:sweeper:lock"
    assert keys.SWEEPER_SWEEPS == "leaflab:sweeper:sweeps"
    assert keys.MODEL_WAIT_LOCK == "leaflab:model_wait:lock"
    assert keys.sandbox_heartbeat("h/1/ab") == "leaflab:sandbox:worker:h/1/ab"
    assert keys.sandbox_inflight("h/1/ab") == "leaflab:sandbox:inflight:h/1/ab"


def test_api_keys_are_unchanged() -> None:
    assert keys.rate_limit_key(ID) == f"leaflab:ratelimit:{ID}"
    assert keys.rate_limit_user(ID) == f"leaflab:ratelimit:user:{ID}"
    assert keys.rate_limit_project(ID) == f"leaflab:ratelimit:project:{ID}"
    assert keys.web_session("ab12") == "leaflab:web:session:ab12"
    assert keys.oidc_pending("ab12") == "leaflab:web:oidc:pending:ab12"
