"""A whole survey over the shared PDFs against the simulator at a fixed latency.

    .venv/bin/python -m bench.survey_pipeline --pdfs 11 --latency-ms 500 [--length medium]
        [--openalex-latency-ms 0]

Real processes (library service, API, one agent worker, simulator) over a
scratch database; the PDFs are ingested first (not timed). The survey is
scripted (every claim supported) so each stage makes exactly its planned
calls. Figures:

- wall: the job's ``finished_at - created_at`` (server clocks);
- model calls: requests the simulator received for the survey's conversations;
- model time: calls x a bare ``ModelClient`` round trip to the same simulator
  at the same latency, measured in this run (the baseline);
- critical path: the model time a perfect platform would still wait for, with
  reading, writing and verifying 4 at a time (plan, ceil(P/4) read waves,
  outline, ceil(S/4) write waves, ceil(S/4) verify waves);
- overhead share: (wall - critical path) / critical path (goal < 5 %);
- parallelism: sum of model time / wall.

``--openalex-latency-ms`` delays every recorded OpenAlex search answer, as the real
service's round trip would (gather asks it when the library is thin).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from bench.scratch_stack import scratch_stack
from services.common.db import build_engine, build_sessionmaker
from services.common.surveys import shape_for
from services.worker.llm.client import ModelClient
from services.worker.survey.read import READ_PARALLELISM
from tests.conftest import Stack
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import Services
from tests.fixtures.recorded_web import serve_recorded_web
from tests.library.conftest import PDF_DIR, TOKEN, LibraryProcess
from tests.survey.scripts import expected_keys, plain_survey_scripts


def _ingest(client: httpx.Client, names: list[str]) -> list[dict[str, Any]]:
    ids = []
    for name in names:
        data = (PDF_DIR / name).read_bytes()
        resp = client.post("/v1/library/documents", files={"file": (name, data, "application/pdf")})
        resp.raise_for_status()
        ids.append(resp.json()["id"])
    deadline = time.monotonic() + 1800
    while time.monotonic() < deadline:
        docs = {d["id"]: d for d in client.get("/v1/library/documents").json()["items"]}
        ready = [docs[i] for i in ids if i in docs and docs[i]["status"] == "ready"]
        if len(ready) == len(ids):
            # The keys gather gives depend on each document's extracted metadata.
            fields = ("id", "title", "filename", "authors", "year", "doi", "arxiv_id")
            return [{k: d.get(k) for k in fields} for d in ready]
        if any(docs.get(i, {}).get("status") == "failed" for i in ids):
            raise SystemExit(f"ingest failed: {docs}")
        time.sleep(1)
    raise SystemExit("ingest did not finish")


def _bare_call_s(base_url: str, latency_ms: int, n: int = 5) -> float:
    """Median round trip of one structured-size call straight to the simulator."""
    client = ModelClient(base_url, "sim", max_retries=0)
    times = []
    for _ in range(n):
        start = time.perf_counter()
        client.complete(
            model="sim",
            messages=[{"role": "user", "content": "x" * 4000}],
            max_tokens=2048,
            conversation_key="bench-bare",  # scripted at the survey's latency
        )
        times.append(time.perf_counter() - start)
    client.close()
    return statistics.median(times)


def _timeline(client: httpx.Client, job: dict[str, Any]) -> dict[str, float]:
    """When each stage's step was written, in seconds after the job was created."""
    start = datetime.fromisoformat(job["created_at"])
    stages: dict[str, float] = {"started": 0.0}
    if job.get("started_at"):
        stages["started"] = (datetime.fromisoformat(job["started_at"]) - start).total_seconds()
    for step in client.get(f"/v1/jobs/{job['id']}/steps").json()["items"]:
        at = (datetime.fromisoformat(step["finished_at"]) - start).total_seconds()
        stages[step["name"]] = round(max(at, stages.get(step["name"], 0.0)), 3)
    return stages


def _seconds(job: dict[str, Any]) -> float:
    start = datetime.fromisoformat(job["created_at"])
    end = datetime.fromisoformat(job["finished_at"])
    return (end - start).total_seconds()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pdfs", type=int, default=11)
    parser.add_argument("--latency-ms", type=int, default=500)
    parser.add_argument("--length", choices=["short", "medium", "long"], default="medium")
    parser.add_argument("--openalex-latency-ms", type=int, default=0)
    args = parser.parse_args()
    names = sorted(p.name for p in PDF_DIR.glob("*.pdf"))[: args.pdfs]
    shape = shape_for(args.length)
    os.environ.setdefault("LEAFLAB_HOME", tempfile.mkdtemp(prefix="leaflab-bench-"))
    with (
        scratch_stack("survey") as scratch,
        tempfile.TemporaryDirectory() as logs,
        # Gather asks OpenAlex when the library is thin: the recorded answers stand in.
        serve_recorded_web() as web,
    ):
        services = Services(Stack(scratch.database_url, scratch.redis_url), Path(logs))
        library = LibraryProcess(
            Path(logs),
            {
                "LEAFLAB_FILES_DIR": str(Path(logs) / "files"),
                "LEAFLAB_DATABASE_URL": scratch.database_url,
                "LEAFLAB_REDIS_URL": scratch.redis_url,
            },
        )
        if args.openalex_latency_ms:
            web.stall("/works", args.openalex_latency_ms / 1000)
        try:
            library.wait_ready()
            services.env.update(
                {
                    "LEAFLAB_LIBRARY_URL": library.url,
                    "LEAFLAB_INTERNAL_TOKEN": TOKEN,
                    "LEAFLAB_FILES_DIR": str(Path(logs) / "files"),
                    "LEAFLAB_OPENALEX_BASE_URL": web.base,
                    "LEAFLAB_WEB_ALLOW": web.allow_entry,
                }
            )
            sim = services.simulator()
            url = services.api()
            services.worker()
            factory = build_sessionmaker(build_engine(scratch.database_url, pool_size=2))
            client = client_for(url, make_user(factory))
            client.timeout = httpx.Timeout(120)
            documents = _ingest(client, names)
            keys = expected_keys(documents)
            session_id = str(client.post("/v1/sessions", json={}).json()["id"])
            scripts = plain_survey_scripts(
                session_id, keys, sections=shape.sections, latency_ms=args.latency_ms
            )
            for key, script in scripts.items():
                sim.set_script(key, script)
            body = {"topic": "scientific document processing", "length": args.length}
            job_id = client.post(
                "/v1/jobs", json={"kind": "survey", "session_id": session_id, "input": body}
            ).json()["id"]
            job = wait_job(client, job_id, timeout_s=1800)
            if job["status"] != "succeeded":
                raise SystemExit(f"survey did not succeed: {job}")
            timeline = _timeline(client, job)
            stats = httpx.get(sim.url.removesuffix("/v1") + "/_sim/stats", timeout=10).json()
            calls = sum(
                c["requests"]
                for k, c in stats["conversations"].items()
                if k.startswith(f"{session_id}:survey:")
            )
            sim.set_script("bench-bare", {"latency_ms": args.latency_ms, "replies": []})
            bare_s = _bare_call_s(sim.url, args.latency_ms)
        finally:
            services.stop()
            library.stop()
    papers = job["result"]["papers_found"]
    sections = job["result"]["sections"]
    waves = 1 + math.ceil(papers / READ_PARALLELISM) + 1 + 2 * math.ceil(sections / 4)
    wall = _seconds(job)
    critical = waves * bare_s
    figures = {
        "pdfs": len(names),
        "papers": papers,
        "sections": sections,
        "latency_ms": args.latency_ms,
        "openalex_latency_ms": args.openalex_latency_ms,
        "wall_s": round(wall, 2),
        "model_calls": calls,
        # Four places: at --latency-ms 0 a bare call takes well under a millisecond.
        "bare_call_s": round(bare_s, 4),
        "model_time_sum_s": round(calls * bare_s, 2),
        "critical_path_s": round(critical, 4),
        "overhead_share": round((wall - critical) / critical, 4),
        "parallelism": round(calls * bare_s / wall, 2),
        "cost_usd": job["cost_usd"],
        "stage_done_at_s": timeline,
        "load_avg": os.getloadavg()[0],
    }
    print(
        f"survey over {len(names)} PDFs ({papers} papers, {sections} sections), "
        f"{args.latency_ms} ms simulated latency: wall {wall:.2f} s, {calls} model calls; "
        f"baseline bare call {bare_s * 1000:.0f} ms; critical path {critical:.2f} s "
        f"({waves} waves); overhead {figures['overhead_share'] * 100:.1f} % of it; "
        f"model time summed {calls * bare_s:.2f} s = {figures['parallelism']}x wall"
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
