"""kill -9 of the agent worker after a bash call ran, before its protected changes
were put back and the approval recorded: nothing unapproved stays.

Its own module: the module-wide agent worker of ``test_protected_exec.py`` would
take the job from the victim worker that carries the failpoint.
"""

from __future__ import annotations

from sqlalchemy.orm import Session, sessionmaker

from services.sandbox.settings import SandboxSettings
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import RunningStack, Services
from tests.sandbox.conftest import WorkerProc
from tests.sandbox.test_protected_exec import MAKEFILE, _no_stash_left, _run, _session
from tests.worker.approvals.conftest import tool_messages


def test_a_worker_killed_before_the_hold_is_recorded_puts_the_originals_back(
    services: Services,
    sandbox_worker: WorkerProc,
    sandbox_settings: SandboxSettings,
    session_factory: sessionmaker[Session],
) -> None:
    """kill -9 after the command ran, before its changes were put back and the
    approval recorded: the resumed job restores the protected files from the
    stash and tells the model the call was interrupted; nothing unapproved stays."""
    sim = services.simulator()
    url = services.api()
    services.env["LEAFLAB_FAILPOINTS"] = "tool.after_effect=kill"
    victim = services.worker("victim")
    del services.env["LEAFLAB_FAILPOINTS"]
    client = client_for(url, make_user(session_factory))
    session_id, ws = _session(client, sandbox_settings, {"Makefile": MAKEFILE})
    job_id = _run(
        client, RunningStack(services, sim, url), session_id, "bash", "echo x >> Makefile"
    )
    victim.popen.wait(90)  # died after the command ran, before the hold
    assert (ws / "Makefile").read_text() == MAKEFILE + "x\n"  # the command had run
    services.worker("second")
    job = wait_job(client, job_id, timeout_s=120)
    assert job["status"] == "succeeded", job
    assert (ws / "Makefile").read_text() == MAKEFILE
    (msg,) = tool_messages(client, session_id)
    assert "interrupted" in msg["content"] and "reverted: Makefile" in msg["content"]
    assert client.get(f"/v1/jobs/{job_id}/approvals").json()["items"] == []
    assert _no_stash_left(job_id)
