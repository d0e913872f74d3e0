"""`leaflab admin budget set/list` and `leaflab admin spend` against a running API."""

from __future__ import annotations

import threading
import time

from click.testing import CliRunner, Result
from sqlalchemy.orm import Session, sessionmaker

from services.cli.main import cli
from tests.cli.conftest import run_cli
from tests.fixtures.builders import client_for, make_project, make_user, wait_job
from tests.fixtures.processes import RunningStack


def test_set_list_and_spend_print_tables(
    running: RunningStack, session_factory: sessionmaker[Session]
) -> None:
    admin = make_user(session_factory, admin=True)
    dora = make_user(session_factory)
    project = make_project(session_factory, dora)
    env = {"LEAFLAB_URL": running.url, "LEAFLAB_API_KEY": admin.key}
    runner = CliRunner()

    def run(*args: str) -> str:
        result = runner.invoke(cli, list(args), env=env)
        assert result.exit_code == 0, result.output
        return result.output

    out = run("admin", "budget", "set", "--user", dora.email, "--usd", "50", "--tokens", "900000")
    assert f"budget of user {dora.email}: $50.0000 (monthly)" in out
    run("admin", "budget", "set", "--project", project, "--usd", "500", "--period", "total")
    listed = run("admin", "budget", "list")
    assert "SCOPE" in listed and dora.email in listed and project in listed
    assert "900,000" in listed

    client = client_for(running.url, dora)
    session = client.post("/v1/sessions", json={"project": project}).json()
    running.sim.set_script(session["id"], {"replies": [{"content": "hello"}]})
    job_id = client.post(f"/v1/sessions/{session['id']}/messages", json={"content": "hi"}).json()[
        "job_id"
    ]
    assert wait_job(client, job_id)["status"] == "succeeded"
    by_user = run("admin", "spend", "--by", "user", "--since", "2020-01-01")
    assert dora.email in by_user and "CALLS" in by_user
    assert project in run("admin", "spend", "--by", "project")

    both = runner.invoke(cli, ["admin", "budget", "set", "--usd", "1"], env=env)
    assert both.exit_code != 0 and "exactly one of --user or --project" in both.output


def test_watching_with_no_wait_stops_at_the_budget_pause_and_says_why(
    running: RunningStack, session_factory: sessionmaker[Session]
) -> None:
    admin = client_for(running.url, make_user(session_factory, admin=True))
    frank = make_user(session_factory)
    admin.put("/v1/admin/budgets", json={"user_email": frank.email, "usd": 0})
    result = CliRunner().invoke(
        cli,
        ["submit", "hello", "--watch", "--no-wait"],
        env={"LEAFLAB_URL": running.url, "LEAFLAB_API_KEY": frank.key},
    )
    assert result.exit_code == 1, result.output
    assert "[budget_exhausted]" in result.output
    assert "budget exhausted: the user budget cannot cover the next model call" in result.output


def test_watch_wait_follows_a_paused_job_through_a_raise_to_its_answer(
    running: RunningStack, session_factory: sessionmaker[Session]
) -> None:
    admin = client_for(running.url, make_user(session_factory, admin=True))
    gina = make_user(session_factory)
    admin.put("/v1/admin/budgets", json={"user_email": gina.email, "usd": 0})
    client = client_for(running.url, gina)
    job_id = client.post("/v1/jobs", json={"kind": "turn", "input": {"content": "hello"}}).json()[
        "id"
    ]
    paused = wait_job(client, job_id, statuses=("budget_exhausted", "succeeded", "failed"))
    assert paused["status"] == "budget_exhausted"
    results: list[Result] = []
    watcher = threading.Thread(
        target=lambda: results.append(
            run_cli(running.url, gina.key, "watch", job_id, "--wait", ok=False)
        )
    )
    watcher.start()
    time.sleep(3)  # the watcher is following the paused job (it would have exited by now)
    assert watcher.is_alive()
    admin.put("/v1/admin/budgets", json={"user_email": gina.email, "usd": 5})
    watcher.join(timeout=120)
    assert not watcher.is_alive() and results
    out = results[0].output
    assert results[0].exit_code == 0, out
    lines = out.splitlines()
    assert any(
        line.startswith("[budget_exhausted] paused: your budget is used up") for line in lines
    ), out
    assert "[succeeded] after" in out, out
    # The answer streamed after the raise is what the watcher printed.
    session_id = client.get(f"/v1/jobs/{job_id}").json()["session_id"]
    messages = client.get(f"/v1/sessions/{session_id}/messages").json()["items"]
    answer = [m["content"] for m in messages if m["role"] == "assistant"][-1]
    assert answer.splitlines()[0] in out, out
