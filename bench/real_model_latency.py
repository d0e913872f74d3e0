"""Through Leaflab against directly to the same real model server, side by side.

    .venv/bin/python -m bench.real_model_latency --start-local [--max-tokens 48 --rounds 3]
    .venv/bin/python -m bench.real_model_latency --base-url http://gpu:8000/v1 \
        --concurrency 1,16,64 --worker-threads 64
    .venv/bin/python -m bench.real_model_latency --sim --latency-ms 50   # no real server

Four variants, alternated (ABAB: the order flips every round, so load from
other work falls on all alike), each at every ``--concurrency`` (that many calls
started together, every round):

- ``direct``: a plain ``http.client`` streaming POST to /v1/chat/completions
  (the baseline), the benchmark's prompt as one user message;
- ``ModelClient``: the same request through Leaflab's model client
  (services/worker/llm/client.py), its retries included;
- ``direct (worker's request)``: the exact request Leaflab's worker sent for the
  last job (system prompt, tool schemas, the user's message), replayed with the
  plain client: the baseline for the job;
- ``job``: a chat turn through the API and an agent worker (real processes),
  read back as SSE events: time to the first ``token`` event, to ``final``.

Before each batch a one-token request with another prompt evicts the last
prompt from a single-slot server's cache (``--keep-cache`` skips it): otherwise
a variant that follows another with the same prompt gets its prompt evaluated
for free (llama.cpp reuses the previous prompt's longest common prefix).

Per variant: calls that finished (a ``finish_reason``; a single-slot server that
ends a running stream when a new request arrives gives ``[DONE]`` without one),
time to first token, total time, generation tokens/s after the first token (p50
over finished calls), aggregate tokens/s of the batches, and model requests the
server received. Ratios: ModelClient / direct and job / direct (worker's
request), total time per call, with the added milliseconds. The last line is
the figures as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.real_model_calls import (
    Call,
    PlainClient,
    Summary,
    at_once,
    chat_body,
    model_client_call,
    summarise,
)
from bench.real_model_jobs import JobPath, job_path
from bench.real_model_server import add_server_args, model_server, served_model
from services.worker.llm.client import ModelClient

PROMPT = (
    "Write a long, detailed essay about how rivers shape the land around them: "
    "erosion, deposition, floodplains and deltas. Keep going; do not stop early."
)
DIRECT, CLIENT, REPLAY, JOB = "direct", "ModelClient", "direct (worker's request)", "job"
VARIANTS = (DIRECT, CLIENT, REPLAY, JOB)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_server_args(parser)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--rounds", type=int, default=3, help="ABAB rounds per concurrency")
    parser.add_argument("--concurrency", default="1,4", help="comma-separated, e.g. 1,16,64")
    parser.add_argument(
        "--variants",
        default=",".join(VARIANTS),
        help=f"comma-separated subset of: {', '.join(VARIANTS)}",
    )
    parser.add_argument("--worker-threads", type=int, default=8, help="the job path's worker")
    parser.add_argument("--timeout-s", type=float, default=600, help="per call")
    parser.add_argument("--prompt", default=PROMPT)
    parser.add_argument(
        "--keep-cache",
        action="store_true",
        help="no one-token request with another prompt before each batch",
    )
    args = parser.parse_args(argv)  # fmt: skip
    args.levels = [int(c) for c in args.concurrency.split(",")]
    args.variant_list = [v.strip() for v in args.variants.split(",")]
    unknown = set(args.variant_list) - set(VARIANTS)
    if unknown or not args.levels or min(args.levels) < 1:
        parser.error(f"bad --variants {sorted(unknown)} or --concurrency {args.concurrency!r}")
    if REPLAY in args.variant_list and JOB not in args.variant_list:
        parser.error(f"{REPLAY!r} replays the job's request: it needs the {JOB!r} variant")
    return args


def measure(args: argparse.Namespace, base_url: str, logs: Path) -> dict[str, Any]:
    model = args.model or served_model(base_url, args.api_key)
    plain = PlainClient(base_url, args.api_key, timeout_s=args.timeout_s)
    client = ModelClient(base_url, args.api_key, timeout_s=args.timeout_s)
    body = chat_body(model, args.prompt, args.max_tokens)
    with ExitStack() as stack:
        jobs: JobPath | None = None
        if JOB in args.variant_list:
            threads = max(args.worker_threads, *args.levels)
            path = job_path(base_url, model, args.max_tokens, logs, api_key=args.api_key,
                            timeout_s=args.timeout_s, threads=threads)  # fmt: skip
            jobs = stack.enter_context(path)
        calls: dict[str, Callable[[], Call]] = {
            DIRECT: lambda: plain.call(body),
            CLIENT: lambda: model_client_call(client, body),
        }
        if jobs is not None:
            calls[JOB] = lambda: jobs.call(args.prompt)
            calls[REPLAY] = lambda: plain.call(jobs.worker_request())
        variants = [v for v in VARIANTS if v in args.variant_list]
        for name in [JOB, *variants] if jobs else variants:  # warm-up; the job's request first
            calls[name]()
        flush = None if args.keep_cache else lambda: plain.call(flush_body(model))
        figures = {
            str(level): run_level(level, variants, calls, args.rounds, flush)
            for level in args.levels
        }
        sent = jobs.worker_request() if jobs is not None else None
    client.close()
    out: dict[str, Any] = {"model": model, "max_tokens": args.max_tokens, "levels": figures}
    if sent is not None:  # what the job path sends that the bare request does not
        out["worker_request"] = {
            "messages": [m.get("role") for m in sent["messages"]],
            "tools": len(sent.get("tools") or []),
            "chars": len(json.dumps(sent)),
            "stream": bool(sent.get("stream")),
            "max_tokens": sent.get("max_tokens"),
        }
    return out


def flush_body(model: str) -> dict[str, Any]:
    """A one-token request with an unrelated prompt: a single-slot server (llama.cpp) keeps
    the last prompt's evaluation and reuses its longest common prefix, so whichever variant
    ran just before another with the same prompt would find it evaluated already."""
    return {"model": model, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1}


def run_level(
    level: int,
    variants: list[str],
    calls: dict[str, Callable[[], Call]],
    rounds: int,
    flush: Callable[[], object] | None,
) -> dict[str, Any]:
    """Every variant ``rounds`` times at ``level`` calls at once, alternating the order;
    ``flush`` (if any) runs before each batch, so no batch finds its prompt cached."""
    seen: dict[str, list[Call]] = {v: [] for v in variants}
    wall = dict.fromkeys(variants, 0.0)
    for number in range(rounds):
        for name in variants if number % 2 == 0 else variants[::-1]:
            if flush is not None:
                flush()
            started = time.perf_counter()
            seen[name] += at_once(calls[name], level)
            wall[name] += time.perf_counter() - started
    out: dict[str, Any] = {}
    for name in variants:
        summary = summarise(seen[name])
        tokens = sum(c.tokens for c in seen[name] if c.finished)
        out[name] = {**asdict(summary), "aggregate_tokens_per_s": tokens / wall[name]}
    return out


def ratio_line(figures: dict[str, Any], leaflab: str, base: str) -> str | None:
    ours, theirs = figures.get(leaflab), figures.get(base)
    if not ours or not theirs or not ours["total_s"] or not theirs["total_s"]:
        return None
    added = (ours["total_s"] - theirs["total_s"]) * 1000
    return (f"  {leaflab} / {base}: total time per call {ours['total_s'] / theirs['total_s']:.3f}x "
            f"({added:+.0f} ms per call)")  # fmt: skip


def _s(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def report(figures: dict[str, Any], args: argparse.Namespace, server: str) -> None:
    print(f"server {server}, model {figures['model']}, max_tokens {args.max_tokens}, "
          f"{args.rounds} rounds per concurrency (variants alternated"
          f"{'' if args.keep_cache else ', prompt cache evicted before each batch'}); "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")  # fmt: skip
    if "worker_request" in figures:
        print(f"the worker's request (replayed directly): {figures['worker_request']}")
    for level, by_variant in figures["levels"].items():
        print(f"concurrency {level}:")
        print("| variant | calls | finished | TTFT p50 s | total p50 s | tok/s p50 | "
              "tokens/call | aggregate tok/s | model requests |")  # fmt: skip
        print("|---|---|---|---|---|---|---|---|---|")
        for name, row in by_variant.items():
            s = Summary(**{k: v for k, v in row.items() if k != "aggregate_tokens_per_s"})
            print(f"| {name} | {s.calls} | {s.finished} | {_s(s.ttft_s)} | {_s(s.total_s)} | "
                  f"{_s(s.tokens_per_s, 1)} | {_s(s.tokens, 1)} | "
                  f"{row['aggregate_tokens_per_s']:.1f} | {s.model_calls} |")  # fmt: skip
        for leaflab, base in ((CLIENT, DIRECT), (JOB, REPLAY)):
            line = ratio_line(by_variant, leaflab, base)
            if line:
                print(line)
        job = by_variant.get(JOB)
        if job and job["outside_model_s"] is not None:
            outside = job["outside_model_s"] * 1000
            print(f"  job, outside the model call (total minus its requests' time with the "
                  f"server, at the relay): p50 {outside:.0f} ms per turn")  # fmt: skip
        for name, row in by_variant.items():
            for error in row["errors"][:3]:
                print(f"  {name} not finished: {error}")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    logs = Path(tempfile.mkdtemp(prefix="leaflab-bench-realmodel-"))
    os.environ.setdefault("LEAFLAB_HOME", str(logs))
    with model_server(args, logs) as base_url:
        server = "simulator" if args.sim else base_url
        figures = measure(args, base_url, logs)
    figures["load_avg"] = os.getloadavg()[0]
    figures["logs"] = str(logs)
    report(figures, args, server)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
