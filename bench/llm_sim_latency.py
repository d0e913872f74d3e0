"""Model client + simulator round trip, against a raw httpx POST to the same server.

Run: .venv/bin/python bench/llm_sim_latency.py [--n 300] [--out /tmp/llm_results.md]

Prints p50/p99 per mode at 0 ms simulated latency (so the figures are pure
client + server overhead), the client CPU per call of ModelClient against a bare
httpx POST and against the openai SDK path ModelClient took before issue 14
(kept here only as a baseline), the client CPU for a long streamed reply (openai
SDK typed chunks vs ModelClient's JSON reader), and the wall time of C
concurrent calls at 200 ms latency (ideal: 200 ms; serial: C × 200 ms).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import openai

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from services.model_sim.server import start_subprocess  # noqa: E402
from services.worker.llm.client import ModelClient  # noqa: E402
from services.worker.llm.stream import StreamAssembler, iter_sse_data  # noqa: E402

MESSAGES = [
    {"role": "system", "content": "You are a careful research assistant. " * 20},
    {"role": "user", "content": "Summarise the attached notes in three sentences."},
]


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return statistics.median(ordered) * 1000, p99 * 1000


def timed(n: int, call: Callable[[int], object]) -> list[float]:
    for i in range(min(20, n)):  # warm-up: imports, connection pools
        call(i)
    samples = []
    for i in range(n):
        started = time.perf_counter()
        call(i)
        samples.append(time.perf_counter() - started)
    return samples


def round_trips(base_url: str, n: int) -> dict[str, tuple[float, float]]:
    client = ModelClient(base_url, "k", timeout_s=30, max_retries=0)
    raw = httpx.Client(timeout=30)
    body = {"model": "leaflab-sim", "messages": MESSAGES}
    stream_body = {**body, "stream": True, "stream_options": {"include_usage": True}}
    url = f"{base_url}/chat/completions"
    modes: dict[str, Callable[[int], object]] = {
        "baseline: raw httpx POST (whole)": lambda i: raw.post(url, json=body).json(),
        "baseline: raw httpx POST (stream)": lambda i: raw.post(url, json=stream_body).text,
        "ModelClient.complete(stream=False)": lambda i: client.complete(
            model="leaflab-sim", messages=MESSAGES, max_tokens=64, stream=False
        ),
        "ModelClient.complete(stream=True)": lambda i: client.complete(
            model="leaflab-sim", messages=MESSAGES, max_tokens=64
        ),
    }
    results = {name: percentiles(timed(n, call)) for name, call in modes.items()}
    client.close()
    raw.close()
    return results


def sdk_stream_call(sdk: openai.OpenAI, messages: list[dict[str, object]], words: int) -> object:
    """ModelClient's streamed call as it was before issue 14: the SDK builds and sends the
    request (parameters in ``extra_body``, so it does not walk them) and the body is read
    as plain JSON events."""
    assembler = StreamAssembler()
    with sdk.chat.completions.with_streaming_response.create(
        model="leaflab-sim",
        messages=[],
        max_tokens=words,
        timeout=30,
        stream=True,
        stream_options={"include_usage": True},
        extra_body={"messages": messages},
    ) as resp:
        resp.headers.get("x-request-id")
        events = iter_sse_data(resp.iter_lines())
        for data in events:
            if data.startswith("[DONE]"):
                break
            assembler.feed(json.loads(data))
        for _ in events:
            pass
    return assembler


def client_cpu(base_url: str, n: int, rounds: int = 5) -> dict[str, float]:
    """Client CPU ms per call at 0 ms latency for the same short request, by mode. The
    modes take turns in ``rounds`` blocks, so load from other work falls on all alike."""
    client = ModelClient(base_url, "k", timeout_s=30, max_retries=0)
    sdk = openai.OpenAI(base_url=base_url, api_key="k", max_retries=0)
    raw = httpx.Client(timeout=30)
    url = f"{base_url}/chat/completions"
    stream_body = {
        "model": "leaflab-sim",
        "messages": MESSAGES,
        "max_tokens": 64,
        "stream": True,
        "stream_options": {"include_usage": True},
    }

    def raw_stream() -> object:
        with raw.stream("POST", url, json=stream_body) as resp:
            return [json.loads(line[6:]) for line in resp.iter_lines() if line[6:7] == "{"]

    modes: dict[str, Callable[[], object]] = {
        "baseline: bare httpx POST (stream, shared Client)": raw_stream,
        "before issue 14: openai SDK path (stream)": lambda: sdk_stream_call(sdk, MESSAGES, 64),
        "ModelClient.complete(stream=True)": lambda: client.complete(
            model="leaflab-sim", messages=MESSAGES, max_tokens=64
        ),
        "ModelClient.complete(stream=False)": lambda: client.complete(
            model="leaflab-sim", messages=MESSAGES, max_tokens=64, stream=False
        ),
    }
    cpu = dict.fromkeys(modes, 0.0)
    for call in modes.values():  # warm-up: imports, connection pools
        for _ in range(10):
            call()
    per_round = max(1, n // rounds)
    for _ in range(rounds):
        for name, call in modes.items():
            cpu0 = time.process_time()
            for _ in range(per_round):
                call()
            cpu[name] += time.process_time() - cpu0
    client.close()
    sdk.close()
    raw.close()
    return {name: total / (per_round * rounds) * 1000 for name, total in cpu.items()}


def long_reply_cpu(sim_url: str, n: int, words: int) -> dict[str, tuple[float, float]]:
    """Client CPU and wall per call for a reply of ``words`` stream chunks (one per word,
    as a real model streams one chunk per token): the openai SDK's typed stream against
    ModelClient's JSON reader."""
    script = {"replies": [{"content": " ".join(["token"] * words)}]}
    httpx.put(f"{sim_url}/_sim/scripts/bench-long", json=script).raise_for_status()
    headers = {"X-Leaflab-Conversation": "bench-long"}
    sdk = openai.OpenAI(base_url=f"{sim_url}/v1", api_key="k", max_retries=0)
    client = ModelClient(f"{sim_url}/v1", "k", timeout_s=60, max_retries=0)

    def sdk_stream(i: int) -> object:
        chunks = sdk.chat.completions.create(
            model="leaflab-sim",
            messages=MESSAGES,
            max_tokens=words,
            stream=True,
            stream_options={"include_usage": True},
            extra_headers=headers,
        )
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)

    def ours(i: int) -> object:
        return client.complete(
            model="leaflab-sim", messages=MESSAGES, max_tokens=words, conversation_key="bench-long"
        )

    results = {}
    for name, call in (("openai SDK typed stream", sdk_stream), ("ModelClient stream", ours)):
        call(0)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        for i in range(n):
            call(i)
        cpu = (time.process_time() - cpu0) / n * 1000
        results[name] = (cpu, (time.perf_counter() - wall0) / n * 1000)
    sdk.close()
    client.close()
    return results


def long_history_cpu(sim_url: str, n: int, turns: int) -> dict[str, tuple[float, float]]:
    """Client CPU and wall per call when the request carries a ``turns``-message history:
    the SDK's typed ``create`` against ModelClient (which sends the messages untransformed)."""
    history: list[dict[str, object]] = []
    for i in range(turns // 2):
        history.append({"role": "user", "content": f"step {i}: " + "context " * 200})
        call = {"name": "python", "arguments": '{"code": "print(1)"}'}
        history.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": f"c{i}", "type": "function", "function": call}],
            }
        )
    history.append({"role": "user", "content": "and now?"})
    sdk = openai.OpenAI(base_url=f"{sim_url}/v1", api_key="k", max_retries=0)
    client = ModelClient(f"{sim_url}/v1", "k", timeout_s=60, max_retries=0)
    modes: dict[str, Callable[[], object]] = {
        "openai SDK create()": lambda: sdk.chat.completions.create(
            model="leaflab-sim",
            messages=history,
            max_tokens=64,  # type: ignore[arg-type]
        ),
        "ModelClient.complete": lambda: client.complete(
            model="leaflab-sim", messages=history, max_tokens=64, stream=False
        ),
    }
    results = {}
    for name, call in modes.items():
        call()
        cpu0, wall0 = time.process_time(), time.perf_counter()
        for _ in range(n):
            call()
        results[name] = (
            (time.process_time() - cpu0) / n * 1000,
            (time.perf_counter() - wall0) / n * 1000,
        )
    sdk.close()
    client.close()
    return results


def concurrent_wall(sim_url: str, calls: int, latency_ms: int) -> float:
    # One conversation whose script carries the latency, so one simulator serves both parts.
    script = {"latency_ms": latency_ms, "replies": [{"content": "done after a while"}]}
    httpx.put(f"{sim_url}/_sim/scripts/bench-slow", json=script).raise_for_status()
    client = ModelClient(f"{sim_url}/v1", "k", timeout_s=60, max_retries=0)

    def call(i: int) -> object:
        messages = [{"role": "user", "content": f"task {i}"}]
        return client.complete(
            model="leaflab-sim", messages=messages, max_tokens=16, conversation_key="bench-slow"
        )

    with ThreadPoolExecutor(calls) as pool:
        list(pool.map(call, range(calls)))  # warm-up
        started = time.perf_counter()
        list(pool.map(call, range(calls)))
        wall = time.perf_counter() - started
    client.close()
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=300, help="sequential calls per mode")
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--latency-ms", type=int, default=200)
    parser.add_argument("--long-words", type=int, default=2000, help="chunks in the long reply")
    parser.add_argument("--history", type=int, default=100, help="messages in the long history")
    parser.add_argument("--out", type=Path, help="also write the figures as markdown here")
    args = parser.parse_args()

    lines = [f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start", ""]
    sim = start_subprocess(latency_ms=0)
    try:
        results = round_trips(sim.base_url, args.n)
        cpu = client_cpu(sim.base_url, args.n)
        long = long_reply_cpu(sim.url, max(3, args.n // 30), args.long_words)
        history = long_history_cpu(sim.url, max(3, args.n // 10), args.history)
        wall = concurrent_wall(sim.url, args.concurrency, args.latency_ms)
    finally:
        sim.stop()
    lines += [f"| mode (0 ms simulated latency, n={args.n}) | p50 ms | p99 ms |", "|---|---|---|"]
    lines += [f"| {name} | {p50:.2f} | {p99:.2f} |" for name, (p50, p99) in results.items()]
    old, new = (
        cpu["before issue 14: openai SDK path (stream)"],
        cpu["ModelClient.complete(stream=True)"],
    )
    lines += [
        "",
        f"| short reply, 0 ms latency (n={args.n}, modes interleaved) | client CPU ms/call |",
        "|---|---|",
    ]
    lines += [f"| {name} | {ms:.3f} |" for name, ms in cpu.items()]
    lines += ["", f"streamed call, SDK path / ModelClient CPU: {old / new:.2f}x"]
    lines += [
        "",
        f"| long reply, {args.long_words} stream chunks | client CPU ms/call | wall ms/call |",
        "|---|---|---|",
    ]
    lines += [f"| {name} | {cpu:.1f} | {wall:.1f} |" for name, (cpu, wall) in long.items()]
    lines += [
        "",
        f"| {args.history}-message history, whole reply | client CPU ms/call | wall ms/call |",
        "|---|---|---|",
    ]
    lines += [f"| {name} | {cpu:.1f} | {wall:.1f} |" for name, (cpu, wall) in history.items()]
    serial = args.concurrency * args.latency_ms / 1000
    lines += [
        "",
        f"{args.concurrency} concurrent ModelClient calls (stream) at {args.latency_ms} ms "
        f"latency: wall {wall:.2f} s (ideal {args.latency_ms / 1000:.2f} s, serial {serial:.1f} s)",
    ]
    report = "\n".join(lines)
    print(report)
    if args.out:
        command = "`.venv/bin/python bench/llm_sim_latency.py " + " ".join(sys.argv[1:]) + "`"
        title = "# Model client + simulator latency"
        args.out.write_text(f"{title}\n\nCommand: {command}\n\n{report}\n")


if __name__ == "__main__":
    main()
