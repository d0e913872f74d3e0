"""The whole path: a chat turn submitted to Leaflab's API, run by a worker against
the model server, read back as the job's SSE events until ``final``.

The API and one agent worker are real processes over a scratch database (as
tests/fixtures/processes.py starts them). The worker reaches the server through
a :class:`~bench.real_model_relay.TeeRelay`, which keeps each request it sent so
the benchmark can replay exactly that request directly to the server.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from bench.real_model_calls import Call
from bench.real_model_relay import TeeRelay
from bench.scratch_stack import scratch_stack
from services.cli.client import parse_sse
from services.common.db import build_engine, build_sessionmaker
from tests.conftest import Stack
from tests.fixtures.builders import client_for, make_user
from tests.fixtures.processes import Proc, Services


@dataclass
class JobPath:
    """A running API + worker pointed (through the relay) at one model server."""

    clients: list[httpx.Client]  # one per lab member: admission caps running jobs per user
    relay: TeeRelay
    timeout_s: float
    worker: Proc
    _turns: itertools.count[int] = field(default_factory=itertools.count)

    @property
    def client(self) -> httpx.Client:
        return self.clients[next(self._turns) % len(self.clients)]

    def call(self, prompt: str) -> Call:
        """One turn: submit, then follow the job's events; times from the submit."""
        client = self.client  # this call's lab member, for each of its requests
        session_id = str(client.post("/v1/sessions", json={}).json()["id"])
        started = time.perf_counter()
        posted = client.post(
            f"/v1/sessions/{session_id}/messages", json={"content": prompt, "max_turns": 1}
        )
        if posted.status_code != 202:
            return Call(None, time.perf_counter() - started, 0, None, error=posted.text[:200])
        job_id = posted.json()["job_id"]
        ttft, final = self._follow(client, job_id, started)
        total = time.perf_counter() - started
        sent = self.relay.of(session_id)
        job = client.get(f"/v1/jobs/{job_id}").json()
        tokens = sum(r.content_chunks for r in sent)
        error = (
            None
            if job.get("status") == "succeeded"
            else f"job {job.get('status')}: " + str(job.get("error"))[:160]
        )
        # The job's reply finished if it ended with a final event and succeeded.
        model_s = sum(max(r.ended, r.at) - r.at for r in sent)
        return Call(ttft, total, tokens, "final" if final and not error else None, error=error,
                    model_calls=len(sent), model_s=model_s)  # fmt: skip

    def _follow(
        self, client: httpx.Client, job_id: str, started: float
    ) -> tuple[float | None, bool]:
        ttft: float | None = None
        timeout = httpx.Timeout(10.0, read=self.timeout_s)
        with client.stream("GET", f"/v1/jobs/{job_id}/events", timeout=timeout) as resp:
            for event in parse_sse(self._bounded(resp.iter_lines(), started)):
                kind = event.get("event")
                if kind == "token" and ttft is None:
                    ttft = time.perf_counter() - started
                if kind == "final":
                    return ttft, True
        return ttft, False

    def _bounded(self, lines: Iterator[str], started: float) -> Iterator[str]:
        """The stream's lines until the call's deadline or the worker's exit (the API
        pings a quiet stream, so neither would otherwise end it)."""
        for line in lines:
            if time.perf_counter() - started > self.timeout_s:
                return
            if self.worker.popen.poll() is not None:
                raise SystemExit(f"the worker exited; its log: {self.worker.log_path}")
            yield line

    def worker_request(self) -> dict[str, Any]:
        """The first request the worker sent for the newest job: what "directly" replays."""
        # A job's requests carry its session's id as their conversation key (endpoint
        # discovery's probes carry none or "leaflab-discovery").
        turns = [r for r in self.relay.requests if _session_key(r.conversation)]
        if not turns:
            raise SystemExit("the worker sent no job's request through the relay")
        newest = turns[-1].conversation.split(":")[0] + ":"
        return next(r.body for r in turns if (r.conversation + ":").startswith(newest))


def worker_env(
    llm_url: str, model: str, max_tokens: int, *, api_key: str, timeout_s: float, threads: int
) -> dict[str, str]:
    """What the API and worker processes need to run jobs on a slow real model."""
    return {
        "LEAFLAB_LLM_BASE_URL": llm_url,
        "LEAFLAB_LLM_API_KEY": api_key or "sk-local",
        "LEAFLAB_MODEL": model,
        "LEAFLAB_LLM_MAX_TOKENS": str(max_tokens),
        # A slow CPU model takes minutes per call: the slice must not cut it short.
        "LEAFLAB_TIME_SLICE_S": str(int(timeout_s)),
        "LEAFLAB_LLM_TIMEOUT_S": str(int(timeout_s)),
        "LEAFLAB_TASK_SOFT_TIME_LIMIT_S": str(int(timeout_s) + 60),
        "LEAFLAB_TASK_HARD_TIME_LIMIT_S": str(int(timeout_s) + 120),
        "LEAFLAB_BROKER_VISIBILITY_TIMEOUT_S": str(int(timeout_s) + 180),
        "LEAFLAB_LEASE_TTL_S": "30",
        "LEAFLAB_DB_POOL_SIZE": str(threads + 8),
    }


@contextmanager
def job_path(
    base_url: str,
    model: str,
    max_tokens: int,
    logs: Path,
    *,
    api_key: str = "",
    timeout_s: float,
    threads: int = 8,
) -> Iterator[JobPath]:
    """API + one worker (``threads`` threads) whose model is ``base_url`` behind the relay;
    enough lab members that ``threads`` jobs may run at once (8 per member)."""
    parts = urlsplit(base_url)
    relay = TeeRelay((parts.hostname or "127.0.0.1", parts.port or 80))
    port = relay.start()
    with scratch_stack("realmodel") as scratch:
        services = Services(Stack(scratch.database_url, scratch.redis_url), logs)
        services.env.update(
            worker_env(
                f"http://127.0.0.1:{port}{parts.path}",
                model,
                max_tokens,
                api_key=api_key,
                timeout_s=timeout_s,
                threads=threads,
            )  # fmt: skip
        )
        try:
            url = services.api()
            worker = services.worker(concurrency=threads)
            factory = build_sessionmaker(build_engine(scratch.database_url, pool_size=2))
            clients = [client_for(url, make_user(factory)) for _ in range(-(-threads // 8))]
            for client in clients:
                client.timeout = httpx.Timeout(60)
            yield JobPath(clients, relay, timeout_s, worker)
        finally:
            services.stop()
            relay.stop()


def _session_key(conversation: str) -> bool:
    try:
        uuid.UUID(conversation[:36])
    except ValueError:
        return False
    return True
