"""How fast traffic leaves a dead model endpoint: 50 concurrent callers, two endpoints.

Run: .venv/bin/python bench/model_breaker.py [--callers 50] [--redis redis://127.0.0.1:6379/0]

Two simulator processes serve as endpoints A (first candidate) and B. 50 threads
share one router (as a worker's threads do) and call it in a loop. After a
healthy phase (the baseline: latency and throughput with every call on A), A
goes down at t0, either killed (connections refused) or frozen with SIGSTOP
(requests hang until the client's timeout). Figures per mode:

- ``to_all_fallback_s``: from t0 to the last request sent to A (after it, every
  call goes straight to B; the goal is <= 1 s for a refusing endpoint);
- ``all_on_b_by_s``: from t0 until the last call that tried A had its reply from
  B (for a hanging endpoint this includes the request timeout);
- ``breaker_open_after_s``: from t0 until the shared circuit read "open";
- ``failed_calls``: calls that got no reply at all (should be 0);
- the same run without a breaker, as the baseline of what the breaker saves:
  the share of calls after t0 + 1 s that still pay a failed attempt on A.

The last line is all figures as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redis import Redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from services.model_sim.server import SimProcess, start_subprocess  # noqa: E402
from services.worker.llm.routing.breaker import RedisBreaker  # noqa: E402
from services.worker.llm.routing.router import ModelRouter  # noqa: E402
from services.worker.llm.routing.setup import router_from_settings  # noqa: E402
from services.worker.llm.settings import LlmSettings  # noqa: E402

MESSAGES = [{"role": "user", "content": "Summarise the notes in one sentence."}]


@dataclass
class Calls:
    """(start, end, first candidate tried or skipped, its outcome, served by) per call."""

    rows: list[tuple[float, float, str, str, str]] = field(default_factory=list)
    failed: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _router(
    a: SimProcess, b: SimProcess, model: str, redis: Redis | None, timeout_s: float
) -> ModelRouter:
    settings = LlmSettings(
        model=model,
        model_profiles=[
            {"name": "a", "base_url": a.base_url, "models": [model]},
            {"name": "b", "base_url": b.base_url, "models": [model]},
        ],
        llm_timeout_s=timeout_s,
        llm_max_retries=0,
        breaker_failure_threshold=3,
        breaker_cooldown_s=60,
    )
    return router_from_settings(settings, redis=redis)


def _caller(router: ModelRouter, calls: Calls, stop: threading.Event, n: int) -> None:
    key = f"bench-{n}"
    while not stop.is_set():
        started = time.monotonic()
        try:
            routed = router.complete(
                scene="agent_reasoning", messages=MESSAGES, max_tokens=32, conversation_key=key
            )
        except Exception as exc:  # noqa: BLE001 - counted: a call with no reply at all
            with calls.lock:
                calls.failed += 1
                calls.errors.setdefault(f"{type(exc).__name__}: {exc}"[:160], 0)
                calls.errors[f"{type(exc).__name__}: {exc}"[:160]] += 1
            continue
        first = routed.attempts[0]
        with calls.lock:
            calls.rows.append(
                (started, time.monotonic(), first.candidate.profile, first.outcome, routed.profile)
            )


def _watch_open(
    breaker: RedisBreaker, endpoint: str, model: str, stop: threading.Event
) -> float | None:
    while not stop.is_set():
        if breaker.state(endpoint, model) == "open":
            return time.monotonic()
        time.sleep(0.002)
    return None


def run(
    *,
    callers: int,
    redis_url: str,
    mode: str,
    with_breaker: bool,
    healthy_s: float,
    down_s: float,
    timeout_s: float,
    latency_ms: int,
) -> dict[str, Any]:
    a = start_subprocess(latency_ms=latency_ms)
    b = start_subprocess(latency_ms=latency_ms)
    model = f"bench-{uuid.uuid4().hex[:8]}"  # a fresh circuit for every run
    redis = Redis.from_url(redis_url) if with_breaker else None
    router = _router(a, b, model, redis, timeout_s)
    calls, stop = Calls(), threading.Event()
    threads = [
        threading.Thread(target=_caller, args=(router, calls, stop, i)) for i in range(callers)
    ]
    try:
        for t in threads:
            t.start()
        time.sleep(healthy_s)
        with calls.lock:
            healthy = list(calls.rows)
        t0 = time.monotonic()
        if mode == "refuse":
            a.process.kill()
        else:
            os.kill(a.process.pid, signal.SIGSTOP)
        opened: list[float | None] = [None]
        watcher = None
        if isinstance(router.breaker, RedisBreaker):
            breaker = router.breaker
            endpoint = a.url.removeprefix("http://")

            def watch() -> None:
                opened[0] = _watch_open(breaker, endpoint, model, stop)

            watcher = threading.Thread(target=watch)
            watcher.start()
        time.sleep(down_s)
        stop.set()
        for t in threads:
            t.join(timeout_s + 5)
        if watcher is not None:
            watcher.join()
    finally:
        stop.set()
        if mode == "hang" and a.process.poll() is None:
            os.kill(a.process.pid, signal.SIGCONT)
        a.stop()
        b.stop()
    after = [r for r in calls.rows if r[0] >= t0]
    tried_a = [r for r in after if r[2] == "a" and r[3] != "skipped_open"]
    hit_a = [r[0] for r in tried_a]
    # Calls in flight at t0 count too: a hung one leaves A only at its timeout.
    left_a = [
        r
        for r in calls.rows
        if r[1] >= t0 and r[2] == "a" and r[3] != "skipped_open" and r[4] == "b"
    ]
    late = [r for r in after if r[0] >= t0 + 1.0]
    latencies = sorted(r[1] - r[0] for r in healthy)
    return {
        "mode": mode,
        "breaker": with_breaker,
        "healthy_calls_per_s": round(len(healthy) / healthy_s, 1),
        "healthy_p50_ms": round(statistics.median(latencies) * 1000, 1) if latencies else None,
        "healthy_on_a": sum(1 for r in healthy if r[4] == "a"),
        "healthy_total": len(healthy),
        "to_all_fallback_s": round(max(hit_a) - t0, 3) if hit_a else 0.0,
        # A call that tried A is on B at the latest when it ends (a hung request first
        # waits for its timeout): the bound on when the last caller left A.
        "all_on_b_by_s": round(max(r[1] for r in left_a) - t0, 3) if left_a else 0.0,
        "requests_to_a_after_down": len(hit_a),
        "breaker_open_after_s": round(opened[0] - t0, 3) if opened[0] is not None else None,
        "calls_after_down": len(after),
        "late_calls_still_trying_a": round(
            sum(1 for r in late if r[2] == "a" and r[3] != "skipped_open") / max(1, len(late)), 3
        ),
        "failed_calls": calls.failed,
        "errors": dict(sorted(calls.errors.items(), key=lambda e: -e[1])[:3]),
    }


def breaker_cost_us(redis_url: str, n: int = 2000) -> dict[str, float]:
    """CPU + Redis time the breaker adds to one healthy call (acquire + success), and
    to a failing one (acquire + failure), single-threaded."""
    breaker = RedisBreaker(Redis.from_url(redis_url))
    endpoint, model = "bench:1", f"cost-{uuid.uuid4().hex[:8]}"
    samples: dict[str, list[float]] = {"healthy_call_us": [], "failed_call_us": []}
    for i in range(n):
        started = time.perf_counter()
        breaker.acquire(endpoint, model)
        breaker.success(endpoint, model, probe=False)
        samples["healthy_call_us"].append(time.perf_counter() - started)
        if i % 2 == 0:  # stays below the threshold: failure, success, failure, ...
            started = time.perf_counter()
            breaker.acquire(endpoint, model)
            breaker.failure(endpoint, model, probe=False)
            samples["failed_call_us"].append(time.perf_counter() - started)
    return {k: round(statistics.median(v) * 1e6, 1) for k, v in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--callers", type=int, default=50)
    parser.add_argument(
        "--redis", default=os.environ.get("LEAFLAB_REDIS_URL", "redis://127.0.0.1:6379/0")
    )
    parser.add_argument("--healthy-s", type=float, default=2.0)
    parser.add_argument("--down-s", type=float, default=4.0)
    parser.add_argument("--timeout-s", type=float, default=2.0)
    parser.add_argument("--latency-ms", type=int, default=20)
    parser.add_argument("--modes", default="refuse,hang")
    args = parser.parse_args()
    cost = breaker_cost_us(args.redis)
    print(f"breaker cost per call (p50, 1 thread): {cost}", flush=True)
    results = []
    for mode in args.modes.split(","):
        for with_breaker in (True, False):
            figures = run(
                callers=args.callers,
                redis_url=args.redis,
                mode=mode,
                with_breaker=with_breaker,
                healthy_s=args.healthy_s,
                down_s=args.down_s,
                timeout_s=args.timeout_s,
                latency_ms=args.latency_ms,
            )
            results.append(figures)
            print(
                f"{mode:7s} breaker={'on ' if with_breaker else 'off'} "
                f"healthy {figures['healthy_calls_per_s']} calls/s "
                f"p50 {figures['healthy_p50_ms']} ms | "
                f"last request to A after {figures['to_all_fallback_s']} s, "
                f"all on B by {figures['all_on_b_by_s']} s "
                f"(breaker open after {figures['breaker_open_after_s']} s), "
                f"{figures['requests_to_a_after_down']} requests to dead A, "
                f"late calls still trying A: {figures['late_calls_still_trying_a']:.0%}, "
                f"failed calls {figures['failed_calls']}",
                flush=True,
            )
    print(json.dumps({"callers": args.callers, "breaker_cost": cost, "runs": results}))


if __name__ == "__main__":
    main()
