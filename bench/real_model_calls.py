"""One timed chat completion, three ways: a plain HTTP client straight to the
server, Leaflab's ``ModelClient``, and (bench/real_model_jobs.py) a whole job.

A :class:`Call` records what a person at the other end sees: when the first
token arrived, when the reply ended, how many tokens came and whether the reply
finished (a ``finish_reason``) or was cut off (a single-slot server ends a
running stream when a new request arrives: ``[DONE]`` with no finish reason).
"""

from __future__ import annotations

import http.client
import json
import statistics
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from services.worker.llm.client import ModelClient
from services.worker.llm.errors import ModelError


@dataclass
class Call:
    """One call as its caller saw it; times in seconds from sending the request."""

    ttft_s: float | None  # first content token; None: none came
    total_s: float
    tokens: int  # content chunks (llama.cpp and vLLM stream one per token)
    finish_reason: str | None
    error: str | None = None
    model_calls: int = 1  # requests the server received for this call (a job may make more)
    model_s: float | None = None  # the job's: time its requests spent with the server (relay)

    @property
    def finished(self) -> bool:
        return self.error is None and self.finish_reason is not None

    @property
    def tokens_per_s(self) -> float | None:
        """Generation rate after the first token (the prompt's evaluation excluded)."""
        if self.ttft_s is None or self.tokens < 2 or self.total_s <= self.ttft_s:
            return None
        return (self.tokens - 1) / (self.total_s - self.ttft_s)


class PlainClient:
    """The baseline: ``http.client`` on one keep-alive connection per thread, the
    request body sent as given, the SSE stream read line by line. Nothing else."""

    def __init__(self, base_url: str, api_key: str = "", timeout_s: float = 600) -> None:
        parts = urlsplit(base_url)
        self._host, self._port = parts.hostname or "127.0.0.1", parts.port or 80
        self._path = parts.path.rstrip("/") + "/chat/completions"
        self._headers = {"Content-Type": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._timeout_s = timeout_s
        self._local = threading.local()

    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout_s)
            self._local.conn = conn
        return conn

    def call(self, body: dict[str, Any]) -> Call:
        payload = json.dumps(body).encode()
        started = time.perf_counter()
        try:
            return self._call(payload, bool(body.get("stream")), started)
        except (OSError, http.client.HTTPException, ValueError) as exc:
            self._local.conn = None  # a broken connection is not reused
            return Call(None, time.perf_counter() - started, 0, None, error=repr(exc))

    def _call(self, payload: bytes, stream: bool, started: float) -> Call:
        conn = self._connection()
        conn.request("POST", self._path, payload, self._headers)
        resp = conn.getresponse()
        if resp.status != 200:
            text = resp.read()[:200].decode(errors="replace")
            return Call(None, time.perf_counter() - started, 0, None, error=f"{resp.status} {text}")
        if not stream:
            reply = json.loads(resp.read())
            total = time.perf_counter() - started
            choice = reply["choices"][0]
            tokens = int((reply.get("usage") or {}).get("completion_tokens") or 0)
            return Call(total, total, tokens, choice.get("finish_reason"))
        ttft, tokens, finish = None, 0, None
        for raw in resp:
            line = raw.strip()
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if data == b"[DONE]":
                break
            for choice in json.loads(data).get("choices") or []:
                delta = choice.get("delta") or {}
                if delta.get("content") or delta.get("tool_calls"):
                    tokens += 1
                    ttft = ttft if ttft is not None else time.perf_counter() - started
                finish = choice.get("finish_reason") or finish
        resp.read()  # drain, so the connection is reused
        return Call(ttft, time.perf_counter() - started, tokens, finish)


def chat_body(model: str, prompt: str, max_tokens: int) -> dict[str, Any]:
    """The benchmark's own request: one user message, streamed, as Leaflab sends it."""
    return {
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


def model_client_call(client: ModelClient, body: dict[str, Any]) -> Call:
    """The same request through Leaflab's ``ModelClient`` (its retries included)."""
    first: list[float] = []
    tokens = 0
    started = time.perf_counter()

    def on_token(_: str) -> None:
        nonlocal tokens
        tokens += 1
        if not first:
            first.append(time.perf_counter() - started)

    try:
        reply = client.complete(
            model=body["model"],
            messages=body["messages"],
            max_tokens=body["max_tokens"],
            on_token=on_token,
        )
    except ModelError as exc:
        return Call(first[0] if first else None, time.perf_counter() - started, tokens, None,
                    error=f"{exc.error_type}: {exc}"[:200])  # fmt: skip
    total = time.perf_counter() - started
    return Call(first[0] if first else None, total, tokens, reply.finish_reason,
                model_calls=reply.attempts)  # fmt: skip


def at_once(call: Callable[[], Call], concurrency: int) -> list[Call]:
    """``concurrency`` copies of ``call`` started together; each one's own timing."""
    if concurrency == 1:
        return [call()]
    with ThreadPoolExecutor(concurrency) as pool:
        return list(pool.map(lambda _: call(), range(concurrency)))


@dataclass
class Summary:
    """One variant at one concurrency, over every call of the run."""

    calls: int
    finished: int
    ttft_s: float | None  # medians over finished calls
    total_s: float | None
    tokens_per_s: float | None
    tokens: float | None  # mean tokens per finished call
    model_calls: int
    errors: list[str]
    # Jobs only: p50 of total minus the time the job's requests spent with the server.
    outside_model_s: float | None = None
    samples: list[tuple[float | None, float]] | None = None  # (ttft, total) of every call


def summarise(calls: list[Call]) -> Summary:
    done = [c for c in calls if c.finished]

    def median(values: list[float | None]) -> float | None:
        kept = [v for v in values if v is not None]
        return statistics.median(kept) if kept else None

    return Summary(
        calls=len(calls),
        finished=len(done),
        ttft_s=median([c.ttft_s for c in done]),
        total_s=median([c.total_s for c in done]),
        tokens_per_s=median([c.tokens_per_s for c in done]),
        tokens=statistics.mean(c.tokens for c in done) if done else None,
        model_calls=sum(c.model_calls for c in calls),
        outside_model_s=median([c.total_s - c.model_s for c in done if c.model_s is not None]),
        samples=[(c.ttft_s, c.total_s) for c in calls],
        errors=sorted(
            {c.error or f"no finish reason ({c.tokens} tokens)" for c in calls if not c.finished}
        ),  # fmt: skip
    )
