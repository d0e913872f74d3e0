"""How long one model call may take: bounded by silence, and by its measured pace.

Guarantees:

- A streamed reply is never bounded by its length alone. Between two chunks the
  socket waits at most ``idle_s`` (``first_token_s`` for the first one, which
  includes the prompt's evaluation); a longer silence is a stall.
- The total deadline is derived from the stream's own pace: once
  ``measure_after`` tokens have arrived, the rest (``max_tokens`` minus those)
  gets ``slack`` times the time it would take at the measured rate (at least
  ``floor_s``), never beyond ``total_s`` from the call's start. A stream that
  reaches it was making progress: the client keeps its partial reply
  (finish_reason ``deadline``) instead of throwing the work away.
- A reply that is not streamed gives no sign of progress until it is whole: it
  may take ``first_token_s + max_tokens × whole_s_per_token``, capped by
  ``total_s``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass(frozen=True)
class TimeoutPolicy:
    """The timeouts of one endpoint's calls (LEAFLAB_LLM_TIMEOUT_S, _IDLE_TIMEOUT_S,
    _TOTAL_TIMEOUT_S)."""

    first_token_s: float = 120.0
    idle_s: float = 60.0
    total_s: float = 1800.0
    measure_after: int = 16
    slack: float = 2.0
    floor_s: float = 30.0
    # A whole (non-streamed) reply: assume the model makes at least 2 tokens a second.
    whole_s_per_token: float = 0.5

    def whole_reply_s(self, max_tokens: int) -> float:
        """How long a non-streamed reply of up to ``max_tokens`` may take."""
        return min(self.total_s, self.first_token_s + max_tokens * self.whole_s_per_token)


class StreamDeadline:
    """The deadline of one streamed reply, tightened once its token rate is known."""

    def __init__(
        self, policy: TimeoutPolicy, *, max_tokens: int, started: float | None = None
    ) -> None:
        self.policy = policy
        self.max_tokens = max_tokens
        self.started = time.monotonic() if started is None else started
        self.at = self.started + policy.total_s
        self.tokens = 0
        self._first_at: float | None = None
        self._measured = False

    def token(self, now: float) -> None:
        """One more token (a chunk that carried text or tool-call arguments) arrived."""
        self.tokens += 1
        if self._first_at is None:
            self._first_at = now
            return
        if self._measured or self.tokens < self.policy.measure_after:
            return
        self._measured = True
        # The rate from the first token on: the wait before it was the prompt's evaluation.
        rate = (self.tokens - 1) / max(now - self._first_at, 1e-6)
        remaining = max(self.max_tokens - self.tokens, 0)
        rest_s = max(self.policy.floor_s, remaining / rate * self.policy.slack)
        self.at = min(self.at, now + rest_s)

    def read_timeout(self, now: float) -> float:
        """The socket timeout for the next read: the silence allowed, or less when the
        deadline comes first (so a slow reply is cut at its deadline, not later)."""
        silence = self.policy.idle_s if self.tokens else self.policy.first_token_s
        return max(0.001, min(silence, self.at - now))

    def passed(self, now: float) -> bool:
        return now >= self.at

    @property
    def progressing(self) -> bool:
        """Tokens arrived: a cut now keeps work worth keeping."""
        return self.tokens > 0
