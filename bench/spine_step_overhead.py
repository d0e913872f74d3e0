"""Platform overhead per agent step, with the model simulator at 0 ms latency.

Runs real turn jobs in-process (lease, ledger, messages, events, Postgres,
Redis) and subtracts, per round, the time spent inside the model call and
inside the tool itself, both measured in the same run. What remains is what
Leaflab adds. Goal: p50 ≤ 5 ms per step.

    .venv/bin/python -m bench.spine_step_overhead [--jobs 5 --rounds 30]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import uuid
from pathlib import Path

from bench.harness import Timings, in_process_deps, percentile, scratch_database
from services.cli.up.commands import model_sim_argv
from services.common.models import ChatSession, Job, User
from services.worker.runtime.advance import advance
from services.worker.runtime.conversation import append_message
from services.worker.tools.files import file_tools
from tests.fixtures.processes import Proc, free_port, wait_http


def _make_job(factory, user_id: uuid.UUID) -> tuple[uuid.UUID, uuid.UUID]:  # type: ignore[no-untyped-def]
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
        return job.id, session.id


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()

    database_url = scratch_database("leaflab_bench_steps")
    logs = Path(tempfile.mkdtemp())
    script = {
        "latency_ms": 0,
        "replies": [{"tool_calls": [{"name": "glob", "arguments": {"pattern": "*.md"}}]}]
        * args.rounds
        + [{"content": "done"}],
    }
    (logs / "script.json").write_text(json.dumps(script))
    port = free_port()
    sim = Proc("sim", model_sim_argv(port=port, script=str(logs / "script.json")), {}, logs)
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", sim)
        timings = Timings(model_s=[], tool_s=[])
        glob_tool = [t for t in file_tools() if t.name == "glob"]
        deps, factory = in_process_deps(
            database_url=database_url,
            llm_url=f"http://127.0.0.1:{port}/v1",
            tools=glob_tool,
            timings=timings,
        )
        with factory() as db, db.begin():
            user = User(email=f"bench-{uuid.uuid4().hex[:6]}@lab.test")
            db.add(user)
            db.flush()
            user_id = user.id
        overheads: list[float] = []
        for _ in range(args.jobs):
            job_id, _ = _make_job(factory, user_id)
            timings.model_s.clear()
            timings.tool_s.clear()
            start = time.perf_counter()
            advance(deps, job_id)
            wall = time.perf_counter() - start
            steps = len(timings.model_s) + len(timings.tool_s)
            inside = sum(timings.model_s) + sum(timings.tool_s)
            overheads.append((wall - inside) / steps)
        model_p50 = percentile(timings.model_s, 50) * 1000
        deps.keeper.stop()
    finally:
        sim.stop()
    per_step = [o * 1000 for o in overheads]
    print(f"jobs={args.jobs} rounds/job={args.rounds} (each round = 1 model call + 1 tool call)")
    print(f"baseline: model call p50 {model_p50:.2f} ms (simulator at 0 ms latency, same run)")
    print(
        f"platform overhead per step: p50 {percentile(per_step, 50):.2f} ms, "
        f"p99 {percentile(per_step, 99):.2f} ms, min {min(per_step):.2f} ms "
        f"(mean per step, per job)"
    )


if __name__ == "__main__":
    main()
