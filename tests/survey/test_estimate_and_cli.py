"""Before a survey starts: its input checked (4xx, never 500), its estimate against the
budget, and ``leaflab survey`` from estimate to a finished report."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy.orm import Session, sessionmaker

from services.cli.main import cli
from tests.fixtures.builders import client_for, make_project, make_user
from tests.survey.conftest import SurveyStack
from tests.survey.survey_run import TOPIC, artifacts, cited_keys, open_scripted_session

BAD_INPUTS: list[dict[str, Any]] = [
    {"topic": "x"},
    {"topic": "   \t  "},
    {"topic": "enzymes", "length": "huge"},
    {"topic": "enzymes", "years": "recent"},
    {"topic": "enzymes", "formats": ["pdf"]},
    {"topic": "enzymes", "formats": []},
    {"topic": "enzymes", "seed_papers": [""]},
    {"topic": "enzymes", "venues": ["x" * 201]},
    {"topic": "enzymes", "colour": "blue"},
]


class TestSurveyInput:
    @pytest.mark.parametrize("bad", BAD_INPUTS)
    def test_bad_input_is_a_clear_422(self, survey_stack: SurveyStack, bad: dict) -> None:
        with survey_stack.client() as client:
            for path, body in (
                ("/v1/surveys/estimate", bad),
                ("/v1/jobs", {"kind": "survey", "input": bad}),
            ):
                resp = client.post(path, json=body)
                assert resp.status_code == 422, (path, bad, resp.text)
                assert resp.json()["error"]["message"], resp.text


class TestEstimate:
    def test_calls_follow_the_library_and_the_budget_is_checked(
        self, survey_stack: SurveyStack, session_factory: sessionmaker[Session]
    ) -> None:
        with survey_stack.client() as client:
            short = client.post("/v1/surveys/estimate", json={"topic": TOPIC, "length": "short"})
            assert short.status_code == 200, short.text
            got = short.json()
            # plan + 3 notes + outline + 3 sections + 3 checks
            assert got["papers"] == 3 and got["model_calls"] == 11
            assert got["input_tokens"] > got["output_tokens"] > 0 and got["cost_usd"] > 0
            assert got["budget_remaining_usd"] is None and got["within_budget"] is True
            seeded = client.post(
                "/v1/surveys/estimate",
                json={"topic": TOPIC, "length": "short", "seed_papers": ["10.1/a", "10.1/b"]},
            ).json()
            assert seeded["papers"] == 5 and seeded["model_calls"] == 13
            project = make_project(session_factory, survey_stack.member)
            admin = client_for(survey_stack.url, make_user(session_factory, admin=True))
            admin.put("/v1/admin/budgets", json={"project": project, "usd": 0.0001})
            tight = client.post(
                "/v1/surveys/estimate", json={"topic": TOPIC, "project": project}
            ).json()
            assert tight["within_budget"] is False
            assert tight["budget_remaining_usd"] == pytest.approx(0.0001)
            unknown = client.post("/v1/surveys/estimate", json={"topic": TOPIC, "project": "nope"})
            assert unknown.status_code == 404
            reversed_years = {"kind": "survey", "input": {"topic": TOPIC, "years": "2026-2019"}}
            queued = client.post("/v1/jobs", json=reversed_years).json()
            # Submitting shows the same estimate (medium: plan + 3 notes + outline + 5 + 5).
            assert queued["estimate"]["model_calls"] == 15 and queued["estimate"]["cost_usd"] > 0
            assert client.get(f"/v1/jobs/{queued['id']}").json()["input"]["years"] == "2019-2026"
            client.post(f"/v1/jobs/{queued['id']}/cancel")

            env = {"LEAFLAB_URL": survey_stack.url, "LEAFLAB_API_KEY": survey_stack.member.key}
            refused = CliRunner().invoke(cli, ["survey", TOPIC, "--project", project], env=env)
            assert refused.exit_code != 0 and "exceeds the remaining budget" in refused.output


class TestSurveyCommand:
    def test_survey_watch_prints_progress_and_finishes(
        self, survey_stack: SurveyStack, tmp_path: Path
    ) -> None:
        with survey_stack.client() as client:
            session_id, keys = open_scripted_session(survey_stack, client)
            env = {"LEAFLAB_URL": survey_stack.url, "LEAFLAB_API_KEY": survey_stack.member.key}
            argv = ["survey", TOPIC, "--length", "short", "--years", "2019-2026"]
            argv += ["--session", session_id, "--watch"]
            result = CliRunner().invoke(cli, argv, env=env)
            assert result.exit_code == 0, result.output
            assert "estimate: 11 model calls over 3 papers" in result.output
            # The watch line of the read stage once every paper is noted (services/cli/watch_text).
            assert re.search(r"\[read \(\d/\d\)\] papers 3/3 read", result.output), result.output
            assert "[succeeded]" in result.output
            (job,) = [
                j
                for j in client.get("/v1/jobs", params={"kind": "survey"}).json()["items"]
                if j["session_id"] == session_id
            ]
            assert job["input"]["years"] == "2019-2026"
            # Only claims the model-independent checks support keep their citations (the
            # script cites two papers for a claim no passage speaks of: it needs checking).
            report_md = artifacts(client, job["id"])["report.md"]
            cited = cited_keys(report_md)
            assert cited and cited < set(keys), cited
            assert "Needs checking" in report_md
            # The watch ends saying where the report is, and the files download.
            assert f"report: {survey_stack.url}/surveys/{job['id']}" in result.output
            assert re.search(rf"  report\.md: {re.escape(survey_stack.url)}/v1/\S+", result.output)
            out = tmp_path / "survey"
            fetched = CliRunner().invoke(cli, ["artifacts", job["id"], "--out", str(out)], env=env)
            assert fetched.exit_code == 0, fetched.output
            report = (out / "report.md").read_text()
            assert report == artifacts(client, job["id"])["report.md"]
            assert str(out / "references.bib") in fetched.output
            listed = CliRunner().invoke(cli, ["artifacts", job["id"]], env=env)
            assert listed.exit_code == 0 and "report.md" in listed.output
            assert "NAME" in listed.output.splitlines()[0]
