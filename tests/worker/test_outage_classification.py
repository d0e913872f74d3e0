"""Which model failures are outages (park the job) and which are request errors
(fail it): every attempt down or overloaded is an outage; an auth refusal or any
request error anywhere is not."""

from __future__ import annotations

from services.worker.llm.errors import ModelError
from services.worker.llm.routing.profiles import Candidate
from services.worker.llm.routing.router import Attempt, RoutingFailed
from services.worker.spine.model_wait import gave_up, outage_of

A, B = Candidate("a", "m"), Candidate("b", "m")


def _error(status: int | None, error_type: str, *, retryable: bool) -> ModelError:
    return ModelError(
        "boom", provider="p", status=status, error_type=error_type, retryable=retryable
    )


def _failed(attempts: list[Attempt], last: ModelError) -> RoutingFailed:
    return RoutingFailed(last, attempts, "balanced")


def test_every_endpoint_down_or_overloaded_is_an_outage() -> None:
    attempts = [
        Attempt(A, "connection"),
        Attempt(B, "server_error", 503),
        Attempt(A, "skipped_open"),
        Attempt(B, "rate_limit", 429),
        Attempt(A, "timeout"),
    ]
    outage = outage_of(_failed(attempts, _error(None, "timeout", retryable=True)), None)
    assert outage is not None
    assert [e["profile"] for e in outage.endpoints] == ["a", "b"]
    assert gave_up(outage, 3600).startswith("the model endpoint a, b was unreachable for 60 min")


def test_an_auth_refusal_or_a_request_error_is_not() -> None:
    down = Attempt(A, "server_error", 503)
    auth = _failed([Attempt(B, "auth", 401), down], _error(503, "server_error", retryable=True))
    assert outage_of(auth, None) is None
    skipped = _failed(
        [down, Attempt(B, "skipped_profile")], _error(503, "server_error", retryable=True)
    )
    assert outage_of(skipped, None) is None
    assert outage_of(_error(400, "bad_request", retryable=False), None) is None
    assert outage_of(_error(400, "context_overflow", retryable=False), None) is None


def test_a_clients_own_retryable_error_names_its_endpoint() -> None:
    outage = outage_of(
        _error(None, "connection", retryable=True), None, base_url="http://127.0.0.1:9/v1"
    )
    assert outage is not None and outage.names() == "p (http://127.0.0.1:9/v1)"
