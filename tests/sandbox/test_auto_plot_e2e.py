"""An unscripted plot request: auto mode writes plot code, the sandbox runs it, a PNG results."""

from __future__ import annotations

from sqlalchemy.orm import Session, sessionmaker

from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import Services
from tests.sandbox.conftest import WorkerProc


def test_a_plot_request_gets_python_that_saves_a_png(
    services: Services, sandbox_worker: WorkerProc, session_factory: sessionmaker[Session]
) -> None:
    services.simulator()  # no script: every reply comes from auto mode
    url = services.api()
    services.worker()
    client = client_for(url, make_user(session_factory))
    session = client.post("/v1/sessions", json={"title": "plot"}).json()
    job_id = client.post(
        f"/v1/sessions/{session['id']}/messages",
        json={"content": "Plot the step response of a first-order system."},
    ).json()["job_id"]
    job = wait_job(client, job_id, timeout_s=120)
    assert job["status"] == "succeeded", job
    steps = client.get(f"/v1/jobs/{job_id}/steps").json()["items"]
    tools = [(s["name"], s["status"]) for s in steps if s["kind"] == "tool"]
    assert tools == [("python", "succeeded")], steps
    artifacts = client.get(f"/v1/jobs/{job_id}/artifacts").json()["items"]
    png = next(a for a in artifacts if a["name"].endswith(".png"))
    assert client.get(png["url"]).content[:8] == b"\x89PNG\r\n\x1a\n"
    assert "python result" in job["result"]["content"]
