"""`leaflab jobs`, `admin spend` and `admin budget list` against a running stack:
tab-separated rows in a pipe, a rich table on a terminal, the API's JSON with --json."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

import httpx
import pytest
from sqlalchemy.orm import Session, sessionmaker

from services.cli.term.literal import literal
from tests.cli.conftest import HOSTILE, LONG, run_cli, visible
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import RunningStack

if TYPE_CHECKING:  # imported by name, pytest would try to collect it as a test class
    from tests.fixtures.builders import TestUser

JOB_HEADER = ["ID", "KIND", "STATUS", "TOKENS", "COST", "CREATED", "INPUT"]


def _turn(lab: RunningStack, client: httpx.Client, content: str) -> dict:
    session = client.post("/v1/sessions", json={}).json()
    lab.sim.set_script(session["id"], {"replies": [{"content": "done"}]})
    body = {"kind": "turn", "session_id": session["id"], "input": {"content": content}}
    job = client.post("/v1/jobs", json=body)
    assert job.status_code == 202, job.text
    return wait_job(client, job.json()["id"])


@pytest.fixture(scope="module")
def people(
    lab: RunningStack, session_factory: sessionmaker[Session]
) -> tuple[TestUser, TestUser, dict]:
    admin, dora = make_user(session_factory, admin=True), make_user(session_factory)
    job = _turn(lab, client_for(lab.url, dora), HOSTILE + LONG)
    assert job["status"] == "succeeded"
    return admin, dora, job


def _rows(output: str) -> list[list[str]]:
    lines = output.splitlines()
    assert lines[0].split("\t") == JOB_HEADER
    return [line.split("\t") for line in lines[1:]]


class TestJobsList:
    def test_pipe_prints_one_tab_separated_row_per_job(
        self, lab: RunningStack, people: tuple[TestUser, TestUser, dict]
    ) -> None:
        _, dora, job = people
        rows = _rows(run_cli(lab.url, dora.key, "jobs").stdout)
        assert len(rows) == 1
        row = dict(zip(JOB_HEADER, rows[0], strict=True))
        assert row["ID"] == job["id"] and row["KIND"] == "turn" and row["STATUS"] == "succeeded"
        tokens = job["usage"]["input_tokens"] + job["usage"]["output_tokens"]
        assert int(row["TOKENS"]) == tokens > 0
        assert row["COST"] == f"${job['cost_usd']:.4f}"
        assert row["INPUT"] == literal(HOSTILE) + LONG  # escaped, never cut in a pipe

    def test_filters_and_json(
        self, lab: RunningStack, people: tuple[TestUser, TestUser, dict]
    ) -> None:
        _, dora, job = people
        assert _rows(run_cli(lab.url, dora.key, "jobs", "--status", "failed").stdout) == []
        assert _rows(run_cli(lab.url, dora.key, "jobs", "--kind", "survey").stdout) == []
        assert len(_rows(run_cli(lab.url, dora.key, "jobs", "--kind", "turn").stdout)) == 1
        doc = json.loads(run_cli(lab.url, dora.key, "jobs", "--json").stdout)
        assert [j["id"] for j in doc["items"]] == [job["id"]]
        assert doc["items"][0]["input"]["content"] == HOSTILE + LONG  # the API's own value
        bad = run_cli(lab.url, dora.key, "jobs", "--status", "bogus", ok=False)
        assert bad.exit_code == 2 and "'bogus' is not one of" in bad.output

    def test_admins_filter_by_user_and_members_may_not(
        self,
        lab: RunningStack,
        people: tuple[TestUser, TestUser, dict],
        session_factory: sessionmaker[Session],
    ) -> None:
        admin, dora, job = people
        other = make_user(session_factory)
        mine = _turn(lab, client_for(lab.url, other), "another user's job")
        by_dora = _rows(run_cli(lab.url, admin.key, "jobs", "--user", dora.email).stdout)
        assert [r[0] for r in by_dora] == [job["id"]]
        by_id = _rows(run_cli(lab.url, admin.key, "jobs", "--user", str(other.id)).stdout)
        assert [r[0] for r in by_id] == [mine["id"]]
        everyone = _rows(run_cli(lab.url, admin.key, "jobs", "--all", "--limit", "500").stdout)
        assert {job["id"], mine["id"]} <= {r[0] for r in everyone}
        assert _rows(run_cli(lab.url, admin.key, "jobs").stdout) == []  # the admin's own
        denied = run_cli(lab.url, dora.key, "jobs", "--user", other.email, ok=False)
        assert denied.exit_code == 1 and "HTTP 403 forbidden" in denied.output
        unknown = run_cli(lab.url, admin.key, "jobs", "--user", "nobody@example.org", ok=False)
        assert unknown.exit_code == 1 and "HTTP 404 not_found" in unknown.output

    def test_terminal_prints_a_table_that_fits_with_values_shown_literally(
        self, lab: RunningStack, people: tuple[TestUser, TestUser, dict]
    ) -> None:
        _, dora, job = people
        out = run_cli(lab.url, dora.key, "jobs", terminal=True).stdout
        assert "\x1b[31mred" not in out and "\x1b]0;" not in out
        shown = visible(out)
        assert "\x1b" not in shown and re.search(r"^\s*ID\s+STATUS\s+COST\s+INPUT", shown, re.M)
        assert "succeeded" in shown and job["id"][:8] in shown
        assert "\\x1b[31mred" in shown  # the hostile input, escaped, in its cell
        assert all(len(line) <= 80 for line in shown.splitlines())


class TestSpendAndBudgets:
    def test_spend_by_user_and_model_as_rows_json_and_table(
        self, lab: RunningStack, people: tuple[TestUser, TestUser, dict]
    ) -> None:
        admin, dora, job = people
        piped = run_cli(lab.url, admin.key, "admin", "spend", "--by", "user")
        lines = piped.stdout.splitlines()
        assert lines[0].split("\t") == ["USER", "CALLS", "IN", "OUT", "CACHED", "COST"]
        row = next(r.split("\t") for r in lines[1:] if r.startswith(dora.email + "\t"))
        assert row[1] == "1" and row[5] == f"${job['cost_usd']:,.4f}"
        assert piped.stderr.startswith("total $")  # stdout stays rows only
        doc = json.loads(run_cli(lab.url, admin.key, "admin", "spend", "--json").stdout)
        assert doc["by"] == "user" and dora.email in {i["key"] for i in doc["items"]}
        models = run_cli(lab.url, admin.key, "admin", "spend", "--by", "model", terminal=True)
        shown = visible(models.stdout)
        assert re.search(r"^\s*MODEL\s+CALLS\s+IN", shown, re.M) and "total $" in shown

    def test_budget_list_json_is_the_api_answer(
        self, lab: RunningStack, people: tuple[TestUser, TestUser, dict]
    ) -> None:
        admin, dora, _ = people
        run_cli(lab.url, admin.key, "admin", "budget", "set", "--user", dora.email, "--usd", "5")
        doc = json.loads(run_cli(lab.url, admin.key, "admin", "budget", "list", "--json").stdout)
        mine = [b for b in doc["items"] if b["user_email"] == dora.email]
        assert len(mine) == 1 and mine[0]["usd_limit"] == 5.0
        rows = run_cli(lab.url, admin.key, "admin", "budget", "list").stdout.splitlines()
        assert rows[0].startswith("SCOPE\tWHO\tLIMIT")
        assert any(r.startswith(f"user\t{dora.email}\t$5.0000") for r in rows)
