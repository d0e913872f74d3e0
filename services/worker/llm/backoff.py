"""How long to wait before retrying a model call."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter; a server's Retry-After wins when longer, up to a cap
    (a model that asks for minutes is better skipped by the router than waited on)."""

    max_retries: int = 2
    base_delay_s: float = 0.5
    max_delay_s: float = 8.0
    max_retry_after_s: float = 30.0

    def delay_s(
        self, retry: int, retry_after: float | None = None, rng: random.Random | None = None
    ) -> float:
        """Wait before retry number ``retry`` (1-based)."""
        backoff = min(self.max_delay_s, self.base_delay_s * 2 ** (retry - 1))
        # Jitter in [50 %, 100 %] spreads out clients that failed together.
        jittered = backoff * (0.5 + (rng or random).random() / 2)
        if retry_after is not None:
            return min(max(retry_after, jittered), self.max_retry_after_s)
        return jittered
