"""A whole survey against a real model server (or the simulator in auto mode): stage
times, model calls, and the share of the wall time the platform spent with no model
call in flight.

    .venv/bin/python -m bench.survey_real_model --start-local [--pdfs 2 --length short]
    .venv/bin/python -m bench.survey_real_model --base-url http://gpu:8000/v1 --pdfs 11
    .venv/bin/python -m bench.survey_real_model --sim --latency-ms 50

Real processes (library service, API, one agent worker) over a scratch database;
the PDFs are ingested first (not timed); nothing is scripted: the server's own
replies drive every stage. The worker reaches the server through a byte relay
(bench/real_model_relay.py) that times every model request from its last byte
sent to its reply's last byte received. Figures:

- wall: the job's ``finished_at - created_at`` (server clocks);
- model calls: requests the relay saw, by HTTP status and ``response_format`` type;
- model busy: the union of those requests' intervals (the baseline: what the
  server itself took, measured in the same run);
- platform overhead share: (wall - model busy) / wall;
- where it stopped: a job that did not succeed is reported with its status, its
  error and the stages it finished (exit status 0: the figures are the point).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from bench.real_model_jobs import worker_env
from bench.real_model_relay import TeeRelay
from bench.real_model_server import add_server_args, model_server, served_model
from bench.scratch_stack import scratch_stack
from bench.survey_pipeline import _ingest, _seconds, _timeline
from services.common.db import build_engine, build_sessionmaker
from tests.conftest import Stack
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import Services
from tests.fixtures.recorded_web import serve_recorded_web
from tests.library.conftest import PDF_DIR, TOKEN, LibraryProcess


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_server_args(parser)
    parser.add_argument("--pdfs", type=int, default=2)
    parser.add_argument("--length", choices=["short", "medium", "long"], default="short")
    parser.add_argument("--max-tokens", type=int, default=512, help="per model call")
    parser.add_argument("--timeout-s", type=float, default=1800, help="the whole survey")
    parser.add_argument("--call-timeout-s", type=float, default=600, help="one model call")
    return parser.parse_args(argv)


def run_survey(args: argparse.Namespace, base_url: str, logs: Path) -> dict[str, Any]:
    """Ingest, submit the survey, wait for it; what the job and the relay recorded."""
    model = args.model or served_model(base_url, args.api_key)
    parts = urlsplit(base_url)
    relay = TeeRelay((parts.hostname or "127.0.0.1", parts.port or 80))
    relay_url = f"http://127.0.0.1:{relay.start()}{parts.path}"
    names = sorted(p.name for p in PDF_DIR.glob("*.pdf"))[: args.pdfs]
    with scratch_stack("survey_real") as scratch, serve_recorded_web() as web:
        services = Services(Stack(scratch.database_url, scratch.redis_url), logs)
        files = str(logs / "files")
        library = LibraryProcess(logs, {"LEAFLAB_FILES_DIR": files,
                                        "LEAFLAB_DATABASE_URL": scratch.database_url,
                                        "LEAFLAB_REDIS_URL": scratch.redis_url})  # fmt: skip
        try:
            library.wait_ready()
            services.env.update(worker_env(relay_url, model, args.max_tokens, api_key=args.api_key,
                                           timeout_s=args.call_timeout_s, threads=8))  # fmt: skip
            services.env.update({"LEAFLAB_LIBRARY_URL": library.url, "LEAFLAB_FILES_DIR": files,
                                 "LEAFLAB_INTERNAL_TOKEN": TOKEN,
                                 "LEAFLAB_OPENALEX_BASE_URL": web.base,
                                 "LEAFLAB_WEB_ALLOW": web.allow_entry})  # fmt: skip
            url = services.api()
            services.worker()
            factory = build_sessionmaker(build_engine(scratch.database_url, pool_size=2))
            client = client_for(url, make_user(factory))
            client.timeout = httpx.Timeout(120)
            _ingest(client, names)
            session_id = str(client.post("/v1/sessions", json={}).json()["id"])
            body = {"topic": "scientific document processing", "length": args.length}
            submitted = time.perf_counter()
            job_id = client.post(
                "/v1/jobs", json={"kind": "survey", "session_id": session_id, "input": body}
            ).json()["id"]
            job = wait_job(client, job_id, timeout_s=args.timeout_s)
            timeline = _timeline(client, job)
            steps = client.get(f"/v1/jobs/{job_id}/steps").json()["items"]
        finally:
            services.stop()
            library.stop()
            relay.stop()
    # The survey's own requests (endpoint discovery's probes are keyed otherwise).
    sent = [r for r in relay.requests if r.at >= submitted and ":survey:" in r.conversation]
    return {
        "model": model,
        "pdfs": len(names),
        "job": job,
        "timeline": timeline,
        "failed_steps": [
            {"name": s["name"], "error": s["error"]} for s in steps if s["status"] == "failed"
        ][:5],
        "model_calls": len(sent),
        "calls_by_stage": dict(Counter(_stage(r.conversation) for r in sent)),
        "relayed_total": len(relay.requests),
        "statuses": dict(Counter(str(r.status) for r in sent)),
        "formats": dict(
            Counter(str((r.body.get("response_format") or {}).get("type")) for r in sent)
        ),
        "busy_s": relay.busy_s(since=submitted),
    }


def _stage(conversation: str) -> str:
    """``<session>:survey:<stage>[:<item>]`` → the stage."""
    parts = conversation.split(":")
    return parts[2] if len(parts) > 2 and parts[1] == "survey" else conversation or "?"


def figures_of(run: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    job = run["job"]
    wall = _seconds(job) if job.get("finished_at") else None
    busy = run["busy_s"]
    result = job.get("result") or {}
    return {
        "model": run["model"],
        "status": job["status"],
        "error": job.get("error"),
        "pdfs": run["pdfs"],
        "length": args.length,
        "max_tokens": args.max_tokens,
        "papers": result.get("papers_found"),
        "sections": result.get("sections"),
        "wall_s": round(wall, 2) if wall is not None else None,
        "model_calls": run["model_calls"],
        "calls_by_stage": run["calls_by_stage"],
        "relayed_total": run["relayed_total"],
        "http_statuses": run["statuses"],
        "response_formats": run["formats"],
        "model_busy_s": round(busy, 2),
        "platform_overhead_s": round(wall - busy, 2) if wall is not None else None,
        "platform_overhead_share": round((wall - busy) / wall, 4) if wall else None,
        "stage_done_at_s": run["timeline"],
        "failed_steps": run["failed_steps"],
        "cost_usd": job.get("cost_usd"),
        "load_avg": os.getloadavg()[0],
    }


def report(figures: dict[str, Any], server: str) -> None:
    f = figures
    print(f"survey ({f['length']}, {f['pdfs']} PDFs) on {server} (model {f['model']}, "
          f"max_tokens {f['max_tokens']}): {f['status']}, wall {f['wall_s']} s, "
          f"{f['model_calls']} model calls {f['http_statuses']} "
          f"(response_format {f['response_formats']})")  # fmt: skip
    if f["wall_s"]:
        print(f"baseline: model busy (a request with the server) {f['model_busy_s']} s; "
              f"platform overhead {f['platform_overhead_s']} s = "
              f"{f['platform_overhead_share'] * 100:.1f} % of the wall time")  # fmt: skip
    print(f"stage done at (s after submit): {f['stage_done_at_s']}")
    if f["status"] != "succeeded":
        print(f"stopped: {str(f['error'])[:300]}")
        for step in f["failed_steps"]:
            print(f"  failed step {step['name']}: {str(step['error'])[:200]}")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    logs = Path(tempfile.mkdtemp(prefix="leaflab-bench-survey-real-"))
    os.environ.setdefault("LEAFLAB_HOME", str(logs))
    with model_server(args, logs) as base_url:
        figures = figures_of(run_survey(args, base_url, logs), args)
    report(figures, "the simulator" if args.sim else base_url)
    print(json.dumps(figures, default=str))


if __name__ == "__main__":
    main()
