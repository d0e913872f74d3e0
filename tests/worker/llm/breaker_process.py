"""A second worker process for the breaker-sharing test: routes ``calls`` requests
through its own router (own clients, own breaker object, the same Redis) and prints
each call's attempts as JSON lines.

    python -m tests.worker.llm.breaker_process A_URL B_URL MODEL KEY REDIS_URL CALLS
"""

from __future__ import annotations

import json
import sys

from redis import Redis

from services.worker.llm.routing.setup import router_from_settings
from services.worker.llm.settings import LlmSettings


def main(argv: list[str]) -> None:
    a_url, b_url, model, key, redis_url, calls = argv
    settings = LlmSettings(
        model=model,
        model_profiles=[
            {"name": "a", "base_url": f"{a_url}/v1", "models": [model]},
            {"name": "b", "base_url": f"{b_url}/v1", "models": [model]},
        ],
        llm_timeout_s=2.0,
        llm_max_retries=0,
        breaker_failure_threshold=2,
        breaker_cooldown_s=60,
    )
    router = router_from_settings(settings, redis=Redis.from_url(redis_url))
    for _ in range(int(calls)):
        routed = router.complete(
            scene="agent_reasoning",
            messages=[{"role": "user", "content": "hi"}],
            max_tokens=16,
            conversation_key=key,
        )
        print(json.dumps([str(a) for a in routed.attempts]), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
