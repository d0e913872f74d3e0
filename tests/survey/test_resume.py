"""Durability: a worker killed (-9) in the middle of the read stage, and a budget that
runs out mid-survey. Neither redoes a finished paper note, and the report comes out
byte for byte as the uninterrupted run's."""

from __future__ import annotations

import time

from sqlalchemy.orm import Session, sessionmaker

from services.worker.survey.keys import conversation, item_key, stage_key
from tests.fixtures.builders import client_for, make_project, make_user, wait_job
from tests.fixtures.processes import Proc
from tests.survey.conftest import SurveyStack
from tests.survey.scripts import expected_keys
from tests.survey.survey_run import Survey, finish, open_scripted_session, step_keys, submit


def _workers(stack: SurveyStack) -> list[Proc]:
    return [
        p for p in stack.services.procs if p.name.startswith("worker") and p.popen.poll() is None
    ]


def _ensure_worker(stack: SurveyStack) -> None:
    """A test that stopped the workers and failed before starting one again must not
    leave the next test's jobs queued with nobody to run them."""
    if not _workers(stack):
        stack.services.worker()


def _read_requests(stack: SurveyStack, session_id: str, keys: list[str]) -> dict[str, int]:
    return {k: len(stack.sim_requests(conversation(session_id, "read", k))) for k in keys}


class TestKilledDuringRead:
    def test_noted_papers_are_not_read_again_and_the_report_is_the_same(
        self,
        survey_stack: SurveyStack,
        baseline: Survey,
        session_factory: sessionmaker[Session],
    ) -> None:
        for proc in _workers(survey_stack):
            proc.stop()
        svc = survey_stack.services
        # Only this worker dies at the failpoint: the env is copied when it starts.
        svc.env["LEAFLAB_FAILPOINTS"] = "survey.after_note=kill"
        try:
            victim = svc.worker("worker-victim")
        finally:
            del svc.env["LEAFLAB_FAILPOINTS"]
        with survey_stack.client() as client:
            # One quick read, two slow ones: the quick note is written while the other
            # two are still in flight (reads run in parallel), so exactly one is noted.
            keys = expected_keys(survey_stack.documents)
            quick = keys[0]
            latency = {k: 300 if k == quick else 4000 for k in keys}
            session_id, keys = open_scripted_session(survey_stack, client, read_latency_ms=latency)
            job_id = submit(client, session_id)
            victim.popen.wait(120)
            noted = [k for k in keys if item_key("read", k) in step_keys(session_factory, job_id)]
            assert noted == [quick], noted  # died right after the first note
            before = _read_requests(survey_stack, session_id, keys)
            assert all(n == 1 for n in before.values()), before  # all three were asked
            svc.worker()
            survey = finish(client, job_id, session_id)
        assert survey.job["status"] == "succeeded", survey.job
        after = _read_requests(survey_stack, session_id, keys)
        assert after[noted[0]] == 1, after  # the noted paper was not read again
        assert all(after[k] == 2 for k in keys if k != noted[0]), after  # in flight: redone
        assert survey.files == baseline.files


class TestBudgetHardLimit:
    def test_a_survey_pauses_at_the_limit_and_resumes_after_a_raise(
        self, survey_stack: SurveyStack, session_factory: sessionmaker[Session]
    ) -> None:
        _ensure_worker(survey_stack)
        admin = client_for(survey_stack.url, make_user(session_factory, admin=True))
        project = make_project(session_factory, survey_stack.member)
        # Room for the plan and about one note: the next call's worst case does not fit.
        put = admin.put(
            "/v1/admin/budgets", json={"project": project, "usd": 0.003, "period": "total"}
        )
        assert put.status_code == 200, put.text
        with survey_stack.client() as client:
            session_id, keys = open_scripted_session(survey_stack, client)
            job_id = submit(client, session_id, project=project)
            paused = wait_job(client, job_id, timeout_s=120, statuses=("budget_exhausted",))
            assert paused["status"] == "budget_exhausted", paused
            assert "budget exhausted" in paused["error"]
            done_before = set(step_keys(session_factory, job_id))
            assert stage_key("assemble") not in done_before
            assert paused["cost_usd"] <= 0.003  # spend never passes the hard limit
            time.sleep(1)  # paused means paused: nothing more is asked of the model
            requests_paused = _read_requests(survey_stack, session_id, keys)
            raised = admin.put(
                "/v1/admin/budgets", json={"project": project, "usd": 5, "period": "total"}
            )
            assert raised.status_code == 200 and job_id in raised.json()["resumed_jobs"]
            survey = finish(client, job_id, session_id)
        assert survey.job["status"] == "succeeded", survey.job
        assert set(_read_requests(survey_stack, session_id, keys).values()) == {1}
        # Notes written before the pause were not asked for again after it.
        for key in keys:
            if item_key("read", key) in done_before:
                assert requests_paused[key] == 1
        assert survey.job["cost_usd"] > paused["cost_usd"]
