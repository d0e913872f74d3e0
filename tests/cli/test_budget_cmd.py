"""`leaflab admin budget set/list` and `leaflab admin spend` against a running API."""

from __future__ import annotations

from click.testing import CliRunner
from sqlalchemy.orm import Session, sessionmaker

from services.cli.main import cli
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


def test_watching_a_job_that_runs_out_of_budget_stops_and_says_why(
    running: RunningStack, session_factory: sessionmaker[Session]
) -> None:
    admin = client_for(running.url, make_user(session_factory, admin=True))
    frank = make_user(session_factory)
    admin.put("/v1/admin/budgets", json={"user_email": frank.email, "usd": 0})
    result = CliRunner().invoke(
        cli,
        ["submit", "hello", "--watch"],
        env={"LEAFLAB_URL": running.url, "LEAFLAB_API_KEY": frank.key},
    )
    assert result.exit_code == 1, result.output
    assert "[budget_exhausted]" in result.output
    assert "budget exhausted: the user budget cannot cover the next model call" in result.output
