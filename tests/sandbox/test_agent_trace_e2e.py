"""A real job with a python tool call: API → agent worker → sandbox worker, one trace."""

from __future__ import annotations

import re
import time
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import Services
from tests.sandbox.conftest import WorkerProc

PID_CODE = """
import numpy as np
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
kp, ki, kd, dt = 2.0, 1.0, 0.1, 0.01
y, integ, prev = 0.0, 0.0, 1.0
ys = []
for _ in range(1000):
    e = 1.0 - y
    integ += e * dt
    u = kp * e + ki * integ + kd * (e - prev) / dt
    prev = e
    y += dt * (-y + u)
    ys.append(y)
plt.plot(np.arange(len(ys)) * dt, ys)
plt.savefig("step.png")
print(f"final={ys[-1]:.3f}")
"""


def _spans_by_service(trace: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for span in trace["spans"]:
        service = span["attributes"].get("service.name") or span.get("service", "?")
        out.setdefault(str(service), []).append(span)
    return out


def test_pid_simulation_returns_numbers_png_and_one_connected_trace(
    services: Services, sandbox_worker: WorkerProc, session_factory: sessionmaker[Session]
) -> None:
    sim = services.simulator()
    url = services.api()
    services.worker()
    client = client_for(url, make_user(session_factory))
    session = client.post("/v1/sessions", json={"title": "pid"}).json()
    sim.set_script(
        session["id"],
        {
            "replies": [
                {
                    "tool_calls": [
                        {"name": "python", "arguments": {"code": PID_CODE, "timeout": 60}}
                    ]
                },
                {"content": "The step response settles at 1.0."},
            ]
        },
    )
    job_id = client.post(
        f"/v1/sessions/{session['id']}/messages", json={"content": "simulate a PID step response"}
    ).json()["job_id"]
    job = wait_job(client, job_id, timeout_s=120)
    assert job["status"] == "succeeded", job

    steps = client.get(f"/v1/jobs/{job_id}/steps").json()["items"]
    python_step = next(s for s in steps if s["name"] == "python")
    assert python_step["status"] == "succeeded", python_step
    final = float(re.search(r"final=([0-9.]+)", python_step["result"]["content"]).group(1))
    assert abs(final - 1.0) < 0.02  # a PID loop with integral action removes the offset
    artifacts = client.get(f"/v1/jobs/{job_id}/artifacts").json()["items"]
    png = next(a for a in artifacts if a["name"].endswith("step.png"))
    assert png["mime"] == "image/png" and png["size"] > 1000
    body = client.get(png["url"]).content
    assert body[:8] == b"\x89PNG\r\n\x1a\n"

    wanted = {"job", "chat leaflab-sim", "execute_tool python", "sandbox.exec"}
    trace: dict[str, Any] = {}
    spans: dict[str, dict[str, Any]] = {}
    roots: list[dict[str, Any]] = []
    deadline = time.monotonic() + 60  # a safety net around the real condition below
    while time.monotonic() < deadline:
        # Each process exports its spans in batches of its own: wait until the
        # trace holds the spans named above *and* every parent of them.
        trace = client.get(f"/v1/traces/{job['trace_id']}").json()
        spans = {s["span_id"]: s for s in trace.get("spans", [])}
        roots = [s for s in spans.values() if s["parent_span_id"] not in spans]
        if wanted <= {s["name"] for s in spans.values()} and len(roots) == 1:
            break
        time.sleep(0.5)
    assert wanted <= {s["name"] for s in spans.values()}, sorted(s["name"] for s in spans.values())
    assert len(roots) == 1, roots  # one connected tree ...
    root = roots[0]
    # ... whose root is the API request that queued the job, with no parent at all.
    assert root["parent_span_id"] is None, root
    assert root["kind"] == "server", root
    assert root["name"] == "POST /v1/sessions/{session_id}/messages", root
    assert root["attributes"]["http.response.status_code"] == 202, root

    def ancestors(span: dict[str, Any]) -> list[str]:
        chain = []
        while span["parent_span_id"] in spans:
            span = spans[span["parent_span_id"]]
            chain.append(span["name"])
        return chain

    sandbox_span = next(s for s in spans.values() if s["name"] == "sandbox.exec")
    assert "execute_tool python" in ancestors(sandbox_span)
    assert "job" in ancestors(sandbox_span)
    chat = next(s for s in spans.values() if s["name"] == "chat leaflab-sim")
    assert chat["attributes"]["gen_ai.operation.name"] == "chat"
    assert chat["attributes"]["gen_ai.request.model"] == "leaflab-sim"
    assert chat["attributes"]["gen_ai.usage.input_tokens"] > 0
