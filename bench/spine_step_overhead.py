"""Platform overhead per agent step, tracing on (Postgres + OTLP sinks).

Runs real turn jobs in-process (lease, ledger, messages, events, Postgres,
Redis, spans) against the model simulator. Each job is N rounds of one model
call (asking for a ``glob``) and one tool run, then a final answer. A job's
wall time is cut at the end of every model call and every tool run, so each
ledger step gets its own duration:

- a model step: from the end of the previous step to the end of the model call
  (recording the previous step, building the request, the model client's
  HTTP + JSON work, the simulator answering);
- a tool step: from the end of the model call to the end of the tool run
  (recording the model step, events, running ``glob``).

The only time subtracted is the simulator's configured sleep (``--latency-ms``);
everything else, including the model client's CPU and the simulator's own
request handling, is counted as Leaflab's. p50/p99 are over individual steps.
Baselines in the same run: a bare ``ModelClient.complete`` round trip against the
same simulator, and the same jobs with tracing off (run first: OpenTelemetry's
global provider can be installed once per process).

    .venv/bin/python -m bench.spine_step_overhead [--jobs 5 --rounds 30 --latency-ms 0]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import httpx
from opentelemetry import trace
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from bench.harness import Timings, in_process_deps, percentile
from bench.otlp_sink import OtlpSinkProcess
from bench.scratch_stack import scratch_stack
from services.cli.up.commands import model_sim_argv
from services.common.models import ChatSession, Job, User
from services.common.telemetry import TelemetrySettings, build_tracer_provider
from services.worker.llm.client import ModelClient
from services.worker.runtime.runners import job_runners
from services.worker.spine.conversation import append_message
from services.worker.spine.deps import RuntimeDeps
from services.worker.spine.dispatch import advance
from services.worker.tools.files import file_tools
from tests.fixtures.processes import Proc, free_port, wait_http


@dataclass
class PassResult:
    steps_ms: list[float]  # every ledger step of every job, simulator sleep subtracted
    finish_ms: list[float]  # after the final answer: record it, finish the job
    cpu_ms_per_step: float  # this process's CPU (runtime + model client) per step
    model_ms: list[float]  # each model call as the runtime saw it


def _make_job(factory: sessionmaker[Session], user_id: uuid.UUID) -> uuid.UUID:
    with factory() as db, db.begin():
        session = ChatSession(user_id=user_id)
        db.add(session)
        db.flush()
        job = Job(
            user_id=user_id,
            session_id=session.id,
            kind="turn",
            input={"content": "go"},
            max_turns=1000,
        )
        db.add(job)
        db.flush()
        append_message(db, session_id=session.id, job_id=job.id, role="user", content="go")
        return job.id


def _split(start: float, end: float, timings: Timings, sleep_s: float) -> tuple[list[float], float]:
    """Per-step durations (ms) of one job from its model/tool end marks."""
    steps, previous = [], start
    for kind, at in timings.marks:
        steps.append((at - previous - (sleep_s if kind == "model" else 0.0)) * 1000)
        previous = at
    return steps, (end - previous) * 1000


def run_pass(
    deps: RuntimeDeps, factory: sessionmaker[Session], timings: Timings, args: argparse.Namespace
) -> PassResult:
    with factory() as db, db.begin():
        user = User(email=f"bench-{uuid.uuid4().hex[:8]}@lab.test")
        db.add(user)
        db.flush()
        user_id = user.id
    result = PassResult([], [], 0.0, [])
    cpu = 0.0
    runners = job_runners()
    for _ in range(args.jobs):
        job_id = _make_job(factory, user_id)
        timings.clear()
        cpu_start, start = time.process_time(), time.perf_counter()
        advance(deps, job_id, runners)
        end, cpu_end = time.perf_counter(), time.process_time()
        steps, finish = _split(start, end, timings, args.latency_ms / 1000)
        expected = 2 * args.rounds + 1
        if len(steps) != expected:
            raise SystemExit(f"job {job_id}: {len(steps)} steps, expected {expected}")
        result.steps_ms += steps
        result.finish_ms.append(finish)
        result.model_ms += [m * 1000 for m in timings.model_s]
        cpu += (cpu_end - cpu_start) * 1000
    result.cpu_ms_per_step = cpu / len(result.steps_ms)
    return result


def bare_model_calls(base_url: str, n: int, latency_ms: int) -> list[float]:
    """ModelClient.complete alone against the same simulator (ms, sleep subtracted)."""
    script = {"latency_ms": latency_ms, "replies": [{"content": "done"}] * (n + 5)}
    httpx.put(f"{base_url[:-3]}/_sim/scripts/bench-bare", json=script).raise_for_status()
    client = ModelClient(base_url, "k", timeout_s=30, max_retries=0)
    out = []
    for i in range(n + 5):
        started = time.perf_counter()
        client.complete(
            model="leaflab-sim",
            messages=[{"role": "user", "content": "go"}],
            max_tokens=64,
            conversation_key="bench-bare",
        )
        if i >= 5:  # warm-up: connection pool, imports
            out.append((time.perf_counter() - started) * 1000 - latency_ms)
    client.close()
    return out


def _line(name: str, values: list[float]) -> str:
    return (
        f"{name}: p50 {percentile(values, 50):.2f} ms, p99 {percentile(values, 99):.2f} ms, "
        f"max {max(values):.2f} ms (n={len(values)})"
    )


def _count_spans(factory: sessionmaker[Session]) -> int:
    with factory() as db:
        return int(db.execute(text("SELECT count(*) FROM spans")).scalar_one())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--latency-ms", type=int, default=0, help="simulator sleep per call")
    args = parser.parse_args()

    logs = Path(tempfile.mkdtemp(prefix="leaflab-bench-steps-"))
    call = {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*.md"}}]}
    replies = [call] * args.rounds + [{"content": "done"}]
    (logs / "script.json").write_text(
        json.dumps({"latency_ms": args.latency_ms, "replies": replies})
    )
    port = free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    with scratch_stack("steps") as scratch, OtlpSinkProcess() as otlp:
        sim = Proc("sim", model_sim_argv(port=port, script=str(logs / "script.json")), {}, logs)
        try:
            wait_http(f"http://127.0.0.1:{port}/healthz", sim)
            timings = Timings()
            deps, factory = in_process_deps(
                database_url=scratch.database_url,
                redis_url=scratch.redis_url,
                llm_url=base_url,
                tools=[t for t in file_tools() if t.name == "glob"],
                timings=timings,
            )
            bare = bare_model_calls(base_url, 2 * args.rounds, args.latency_ms)
            untraced = run_pass(deps, factory, timings, args)
            settings = TelemetrySettings(database_url=scratch.database_url, otlp_endpoint=otlp.url)
            provider = build_tracer_provider("leaflab-worker", settings)
            trace.set_tracer_provider(provider)
            traced = run_pass(deps, factory, timings, args)
            provider.force_flush(60_000)
            stored, received = _count_spans(factory), otlp.count()
            provider.shutdown()
            deps.keeper.stop()
        finally:
            sim.stop()

    print(
        f"jobs={args.jobs} x ({args.rounds} rounds of 1 model call + 1 glob, then an answer); "
        f"simulator sleep {args.latency_ms} ms per call, the only time subtracted"
    )
    print(_line("baseline: bare ModelClient.complete round trip", bare))
    print(_line("baseline: model call inside the runtime, tracing on", traced.model_ms))
    print(_line("platform overhead per step, tracing off", untraced.steps_ms))
    print(_line("platform overhead per step, tracing on (Postgres + OTLP)", traced.steps_ms))
    print(_line("job finish after the final answer, tracing on", traced.finish_ms))
    print(
        f"process CPU per step (runtime + model client): tracing off "
        f"{untraced.cpu_ms_per_step:.2f} ms, tracing on {traced.cpu_ms_per_step:.2f} ms"
    )
    print(f"spans exported: {stored} rows in Postgres, {received} received over OTLP")


if __name__ == "__main__":
    main()
