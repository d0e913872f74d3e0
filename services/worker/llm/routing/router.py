"""``ModelRouter``: scene → tier → candidates, with fallback and the shared breaker.

Guarantees:
- A candidate is left for the next one only on a retryable failure (429, 5xx,
  timeout, disconnect, refused connection); 401/403 skips the rest of that
  *profile* (its key is wrong there, not the model); every other request error
  (400, context overflow, refusal) is raised at once: it would fail anywhere.
- A candidate whose circuit is open is skipped without a request.
- When every circuit of the tier is open, the first open candidate is asked anyway
  (the call would fail for certain otherwise); that does not close its circuit.
- When a whole pass over the candidates failed retryably, the router waits
  (exponential backoff with jitter; a Retry-After wins, up to a cap) and makes
  another pass, at most ``policy.max_retries`` more passes.
- A capability mismatch (``template``, ``unsupported``, ``context_overflow``) is not
  retryable: the endpoint answered, so its circuit counts a success and the error
  is raised at once (no other candidate, no other pass).
- When an attempt that streamed text failed and another attempt follows (the next
  candidate or pass), ``on_retry`` hears of it before the next attempt starts.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from services.worker.llm.backoff import RetryPolicy
from services.worker.llm.errors import ModelError
from services.worker.llm.routing.breaker import Breaker
from services.worker.llm.routing.profiles import TIERS, Candidate
from services.worker.llm.types import ModelResponse, RetryListener, RetryNotice

log = logging.getLogger(__name__)
AUTH_STATUSES = frozenset({401, 403})


class CompletionClient(Protocol):
    """The part of :class:`~services.worker.llm.client.ModelClient` the router uses."""

    provider: str

    def complete(
        self,
        *,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        max_tokens: int,
        conversation_key: str | None = None,
        on_token: Callable[[str], None] | None = None,
        stream: bool = True,
        tool_protocol: Any = "native",
        response_format: dict[str, Any] | None = None,
        on_retry: RetryListener | None = None,
    ) -> ModelResponse: ...


@dataclass(frozen=True)
class Endpoint:
    """A profile as the router uses it: its client, and how it takes tools."""

    name: str
    client: CompletionClient
    json_tool_protocol: bool = False

    @property
    def provider(self) -> str:
        return self.client.provider


@dataclass(frozen=True)
class Attempt:
    """One candidate considered: ``outcome`` is ok, skipped_open, skipped_profile,
    or the failure's error type (rate_limit, server_error, timeout, disconnect, …)."""

    candidate: Candidate
    outcome: str
    status: int | None = None
    probe: bool = False

    def __str__(self) -> str:
        status = f" {self.status}" if self.status is not None else ""
        return f"{self.candidate}={self.outcome}{status}"


@dataclass(frozen=True)
class RoutedResponse:
    response: ModelResponse
    profile: str
    model: str
    provider: str
    scene: str
    tier: str
    reason: str
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def fallback(self) -> bool:
        return any(a.outcome != "ok" for a in self.attempts)


class RoutingFailed(ModelError):
    """Every candidate failed or was skipped; ``routed_attempts`` says how each went."""

    def __init__(self, last: ModelError | None, attempts: list[Attempt], tier: str) -> None:
        tried = ", ".join(str(a) for a in attempts)
        message = f"no candidate of tier {tier!r} answered ({tried})"
        if last is not None:
            message = f"{message}; last error: {last.message}"
        super().__init__(
            message,
            provider=last.provider if last is not None else "router",
            status=last.status if last is not None else None,
            error_type=last.error_type if last is not None else "circuit_open",
            request_id=last.request_id if last is not None else None,
            # Every profile refusing the key is not cured by waiting.
            retryable=last.retryable if last is not None else True,
            retry_after=last.retry_after if last is not None else None,
        )
        self.routed_attempts = attempts
        self.tier = tier


@dataclass
class _Call:
    """One routed request and what happened to it so far."""

    scene: str
    tier: str
    why: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    max_tokens: int
    conversation_key: str | None
    on_token: Callable[[str], None] | None
    stream: bool
    response_format: dict[str, Any] | None = None
    on_retry: RetryListener | None = None
    attempts: list[Attempt] = field(default_factory=list)
    last: ModelError | None = None
    tried: int = 0  # requests sent so far (candidates tried, over all passes)
    streamed: int = 0  # tokens the current attempt streamed
    # The last attempt streamed text and failed: announce it when another one follows.
    unannounced: RetryNotice | None = None

    def token(self, text: str) -> None:
        self.streamed += 1
        if self.on_token is not None:
            self.on_token(text)

    def client_retried(self, notice: RetryNotice) -> None:
        """A client's own retry (or resend) was announced: its text is already dropped."""
        self.streamed = 0
        if self.on_retry is not None:
            self.on_retry(notice)

    def announce(self, wait_s: float) -> None:
        """Tell the listener that the failed attempt's text is void (once)."""
        notice, self.unannounced = self.unannounced, None
        if notice is not None and self.on_retry is not None:
            self.on_retry(RetryNotice(notice.attempt, notice.error, wait_s))


class ModelRouter:
    """Thread-safe: share one per worker process (its clients and breaker are)."""

    def __init__(
        self,
        *,
        endpoints: Mapping[str, Endpoint],
        candidates: Mapping[str, list[Candidate]],
        scenes: Mapping[str, str],
        breaker: Breaker | None = None,
        policy: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.endpoints = dict(endpoints)
        self.candidates = {tier: list(c) for tier, c in candidates.items()}
        self.scenes = dict(scenes)
        self.breaker = breaker
        self.policy = policy or RetryPolicy(max_retries=0)
        self._sleep = sleep

    def tier_for(self, scene: str, tier_override: str | None = None) -> tuple[str, str]:
        """(tier, why) for a scene; an override (the budget's "fast") wins."""
        if tier_override is not None:
            if tier_override not in self.candidates:
                raise ValueError(f"unknown tier {tier_override!r}; tiers: {list(TIERS)}")
            return tier_override, f"tier {tier_override} (override) for scene {scene}"
        tier = self.scenes.get(scene)
        if tier is None:
            return "balanced", f"scene {scene} unknown, tier balanced"
        return tier, f"scene {scene} -> tier {tier}"

    def primary(self, scene: str, tier_override: str | None = None) -> Candidate:
        """The first candidate (what a budget reservation prices before the call)."""
        return self.candidates[self.tier_for(scene, tier_override)[0]][0]

    def complete(
        self,
        *,
        scene: str,
        messages: list[dict[str, Any]],
        max_tokens: int,
        tools: list[dict[str, Any]] | None = None,
        tier_override: str | None = None,
        conversation_key: str | None = None,
        on_token: Callable[[str], None] | None = None,
        stream: bool = True,
        response_format: dict[str, Any] | None = None,
        on_retry: RetryListener | None = None,
    ) -> RoutedResponse:
        """The first candidate's reply that succeeds; raises :class:`ModelError` for a
        request error and :class:`RoutingFailed` when no candidate answered.
        ``on_retry`` hears of every failed attempt that had streamed text to
        ``on_token`` and is followed by another attempt."""
        tier, why = self.tier_for(scene, tier_override)
        call = _Call(
            scene,
            tier,
            why,
            messages,
            tools,
            max_tokens,
            conversation_key,
            on_token,
            stream,
            response_format,
            on_retry,
        )
        retry_after: float | None = None
        for pass_no in range(self.policy.max_retries + 1):
            if pass_no:
                # The longest Retry-After of the pass (capped by the policy) is honoured.
                wait = self.policy.delay_s(pass_no, retry_after)
                log.warning("every %s candidate failed; next pass in %.2fs", tier, wait)
                call.announce(wait)
                self._sleep(wait)
            routed, retry_after = self._pass(call)
            if routed is not None:
                return routed
            if call.last is not None and not call.last.retryable:
                break  # only auth failures this pass: another pass cannot help
        raise RoutingFailed(call.last, call.attempts, tier)

    def _pass(self, call: _Call) -> tuple[RoutedResponse | None, float | None]:
        """One try over the tier's candidates: a reply, or None and the pass's longest
        Retry-After. Raises a request error as it comes."""
        failed_profiles: set[str] = set()
        retry_after: float | None = None
        first_open: tuple[int, Candidate] | None = None
        tried = False
        for index, candidate in enumerate(self.candidates[call.tier]):
            if candidate.profile in failed_profiles:
                call.attempts.append(Attempt(candidate, "skipped_profile"))
                continue
            decision = self._acquire(candidate)
            if decision == "skip":
                call.attempts.append(Attempt(candidate, "skipped_open"))
                first_open = first_open or (index, candidate)
                continue
            tried = True
            routed = self._try(call, index, candidate, probe=decision == "probe")
            if routed is not None:
                return routed, None
            err = call.last
            assert err is not None
            if err.retry_after is not None:
                retry_after = max(retry_after or 0.0, err.retry_after)
            if err.status in AUTH_STATUSES:
                failed_profiles.add(candidate.profile)
        if not tried and first_open is not None:
            # Every circuit is open: asking the first candidate anyway costs one request,
            # while answering without one fails the call for certain. Its result does not
            # move the open circuit (only a granted probe does).
            index, candidate = first_open
            routed = self._try(call, index, candidate, probe=False, forced=True)
            if routed is not None:
                return routed, None
            assert call.last is not None
            retry_after = call.last.retry_after
        return None, retry_after

    def _try(
        self, call: _Call, index: int, candidate: Candidate, *, probe: bool, forced: bool = False
    ) -> RoutedResponse | None:
        call.announce(0.0)  # the next candidate goes at once
        call.tried += 1
        call.streamed = 0
        try:
            response = self._call(candidate, call)
        except ModelError as err:
            call.attempts.append(Attempt(candidate, err.error_type, err.status, probe))
            call.last = err
            if call.streamed:
                call.unannounced = RetryNotice(call.tried, str(err), 0.0)
            if err.retryable:
                self._report(candidate, ok=False, probe=probe)
                return None
            self._report(candidate, ok=True, probe=probe)  # it answered
            if err.status in AUTH_STATUSES:
                return None
            err.routed_attempts = call.attempts  # type: ignore[attr-defined]
            raise
        self._report(candidate, ok=True, probe=probe)
        call.attempts.append(Attempt(candidate, "ok", probe=probe))
        place = "primary" if index == 0 else f"fallback #{index}"
        reason = f"{call.why}; {place} {candidate}"
        if probe:
            reason += " (half-open probe)"
        if forced:
            reason += " (every circuit open: tried anyway)"
        return RoutedResponse(
            response=response,
            profile=candidate.profile,
            model=candidate.model,
            provider=self.endpoints[candidate.profile].provider,
            scene=call.scene,
            tier=call.tier,
            reason=reason,
            attempts=call.attempts,
        )

    def _call(self, candidate: Candidate, call: _Call) -> ModelResponse:
        endpoint = self.endpoints[candidate.profile]
        # Only structured-output calls pass response_format (and only watched calls
        # on_retry), so clients that predate them (test doubles of CompletionClient)
        # keep working for everything else.
        extra: dict[str, Any] = {}
        if call.response_format is not None:
            extra["response_format"] = call.response_format
        if call.on_retry is not None:
            extra["on_retry"] = call.client_retried
        return endpoint.client.complete(
            model=candidate.model,
            messages=call.messages,
            tools=call.tools,
            max_tokens=call.max_tokens,
            conversation_key=call.conversation_key,
            on_token=call.token if call.on_token is not None else None,
            stream=call.stream,
            tool_protocol="json" if endpoint.json_tool_protocol else "native",
            **extra,
        )

    def _acquire(self, candidate: Candidate) -> str:
        if self.breaker is None:
            return "allow"
        return self.breaker.acquire(self._endpoint_key(candidate), candidate.model)

    def _report(self, candidate: Candidate, *, ok: bool, probe: bool) -> None:
        if self.breaker is None:
            return
        key = self._endpoint_key(candidate)
        if ok:
            self.breaker.success(key, candidate.model, probe=probe)
        else:
            self.breaker.failure(key, candidate.model, probe=probe)

    def _endpoint_key(self, candidate: Candidate) -> str:
        # The breaker guards the endpoint (host), whichever profile reaches it.
        return self.endpoints[candidate.profile].provider
