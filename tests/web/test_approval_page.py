"""The Approvals page in Chromium: a protected write waits for a human, who sees the
per-file diff and applies it, requests changes (the model gets the feedback) or rejects it.

Real simulator, API and agent worker (the module-wide ``running`` stack); every test has
its own user, so the page lists that test's approval only. Paths and file contents come
from the model: here they carry markup, which must show as text and never run.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import BrowserContext, Locator, Page, expect
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import Project
from tests.fixtures.builders import TestUser, client_for, make_project, make_user, wait_job
from tests.fixtures.processes import RunningStack
from tests.web.browser import login, screenshot_dir
from tests.web.sandbox_stack import sandbox_worker_for_pages  # noqa: F401 - a fixture

XSS_PATH = "<img src=x onerror=window.__xss=1>.tex"
XSS_LINE = "<script>window.__xss=2</script> \\section{Results}"
JOB_TIMEOUT_MS = 60_000


def _write_script(path: str, content: str, then: str) -> dict[str, Any]:
    call = {"name": "write_file", "arguments": {"path": path, "content": content}}
    return {"latency_ms": 20, "replies": [{"tool_calls": [call]}, {"content": then}]}


def _waiting_turn(
    running: RunningStack, user: TestUser, script: dict[str, Any], **session: Any
) -> tuple[str, str]:
    """(session id, job id) of a turn that now waits for approval of its tool call."""
    with client_for(running.url, user) as client:
        session_id = client.post("/v1/sessions", json={"title": "edit", **session}).json()["id"]
        running.sim.set_script(session_id, script)
        resp = client.post(f"/v1/sessions/{session_id}/messages", json={"content": "please edit"})
        assert resp.status_code == 202, resp.text
        job_id = str(resp.json()["job_id"])
        job = wait_job(client, job_id, statuses=("waiting_approval", "succeeded", "failed"))
    assert job["status"] == "waiting_approval", job
    return str(session_id), job_id


def _workspace_file(session_id: str, path: str) -> Path:
    return Path(os.environ["LEAFLAB_HOME"]) / "workspaces" / session_id / path


def _approval_card(page: Page, job_id: str) -> Locator:
    card = page.locator(f"[data-testid=approval][data-job-id='{job_id}']")
    expect(card).to_have_count(1)
    return card


def _approvals(running: RunningStack, user: TestUser, job_id: str) -> list[dict[str, Any]]:
    with client_for(running.url, user) as client:
        items: list[dict[str, Any]] = client.get(f"/v1/jobs/{job_id}/approvals").json()["items"]
    return items


class TestApprovalsPage:
    @pytest.mark.usefixtures("sandbox_worker_for_pages")
    def test_a_command_that_wrote_a_makefile_shows_command_output_and_diff(
        self, running: RunningStack, context: BrowserContext, session_factory: sessionmaker[Session]
    ) -> None:
        """A bash call's protected change: the card says a command changed a protected
        file, shows the command, its output (model-made markup stays text) and the
        Makefile's diff; Apply from the page puts the Makefile in place."""
        user = make_user(session_factory)
        command = "printf 'all:\\n\\ttrue\\n' > Makefile; echo '<img src=x onerror=window.__xss=4>'"
        call = {"name": "bash", "arguments": {"command": command, "timeout": 60}}
        script = {"replies": [{"tool_calls": [call]}, {"content": "built"}]}
        session_id, job_id = _waiting_turn(running, user, script)
        assert not _workspace_file(session_id, "Makefile").exists()
        page = login(context, running.url, user.key, next_path="/approvals")
        card = _approval_card(page, job_id)
        expect(card.locator("h2")).to_contain_text("changed 1 protected file(s)")
        expect(card.get_by_test_id("approval-output")).to_contain_text("<img src=x")
        diff = card.get_by_test_id("approval-diff").filter(has_text="Makefile")
        expect(diff.get_by_test_id("approval-path")).to_have_text("Makefile")
        expect(diff.locator(".dl-add").filter(has_text="all:")).to_have_count(1)
        assert card.locator("img").count() == 0
        card.get_by_test_id("approval-apply").click()
        outcome = card.get_by_test_id("approval-outcome")
        expect(outcome).to_contain_text("Job succeeded", timeout=JOB_TIMEOUT_MS)
        assert _workspace_file(session_id, "Makefile").read_text() == "all:\n\ttrue\n"
        assert page.evaluate("window.__xss") is None

    def test_apply_from_the_page_writes_the_file_and_markup_stays_text(
        self, running: RunningStack, context: BrowserContext, session_factory: sessionmaker[Session]
    ) -> None:
        user = make_user(session_factory)
        content = f"{XSS_LINE}\nIt works.\n"
        session_id, job_id = _waiting_turn(
            running, user, _write_script(XSS_PATH, content, then="written")
        )
        # From the job's own page, its link leads to the pending approval.
        page = login(context, running.url, user.key, next_path=f"/jobs/{job_id}")
        # The nav says a job is waiting, on every page.
        expect(page.get_by_test_id("nav-approvals-count")).to_have_text("1")
        page.get_by_test_id("job-approval-link").click()
        page.wait_for_url(f"**/approvals?job={job_id}")
        card = _approval_card(page, job_id)
        expect(page.get_by_test_id("approval")).to_have_count(1)
        diff = card.get_by_test_id("approval-diff")
        expect(diff).to_have_count(1)
        # The file name header and the diff lines, coloured by kind, all as plain text.
        expect(diff.get_by_test_id("approval-path")).to_have_text(XSS_PATH)
        added = diff.locator(".dl-add")
        expect(added.filter(has_text=XSS_LINE)).to_have_count(1)
        expect(added.filter(has_text="It works.")).to_have_count(1)
        expect(diff.locator(".dl-hunk")).not_to_have_count(0)
        assert diff.locator("img, script").count() == 0
        assert page.evaluate("window.__xss") is None
        page.screenshot(path=str(screenshot_dir() / "approvals.png"), full_page=True)

        card.get_by_test_id("approval-apply").click()
        outcome = card.get_by_test_id("approval-outcome")
        expect(outcome).to_contain_text("Job succeeded", timeout=JOB_TIMEOUT_MS)
        expect(outcome).to_contain_text("approval applied")
        expect(card).to_have_attribute("data-status", "applied")
        expect(card.get_by_test_id("approval-apply")).to_have_count(0)
        page.evaluate("Leaflab.refreshApprovalCount()")
        expect(page.get_by_test_id("nav-approvals-count")).to_be_hidden()
        assert _workspace_file(session_id, XSS_PATH).read_text() == content
        (after,) = _approvals(running, user, job_id)
        assert after["status"] == "applied"
        assert page.evaluate("window.__xss") is None

    def test_request_changes_needs_feedback_and_the_model_receives_it(
        self, running: RunningStack, context: BrowserContext, session_factory: sessionmaker[Session]
    ) -> None:
        user = make_user(session_factory)
        session_id, job_id = _waiting_turn(
            running, user, _write_script("refs.bib", "@article{x}\n", then="will fix")
        )
        page = login(context, running.url, user.key, next_path="/approvals")
        card = _approval_card(page, job_id)
        # Without feedback nothing is sent: the page says what is missing.
        card.get_by_test_id("approval-request-changes").click()
        expect(card.get_by_test_id("approval-outcome")).to_contain_text("Write the feedback")
        assert _approvals(running, user, job_id)[0]["status"] == "pending"

        feedback = "use the DOI-based key, not <b>x</b>"
        card.get_by_test_id("approval-feedback").fill(feedback)
        card.get_by_test_id("approval-request-changes").click()
        expect(card.get_by_test_id("approval-outcome")).to_contain_text(
            "Job succeeded", timeout=JOB_TIMEOUT_MS
        )
        expect(card).to_have_attribute("data-status", "changes_requested")
        assert not _workspace_file(session_id, "refs.bib").exists()
        # The model's next request carried the feedback as the write's tool result.
        base = running.sim.url.removesuffix("/v1")
        requests = httpx.get(f"{base}/_sim/requests", params={"key": session_id}).json()["items"]
        tool_results = [m for m in requests[-1]["messages"] if m["role"] == "tool"]
        assert tool_results and feedback in str(tool_results[-1]["content"])
        (after,) = _approvals(running, user, job_id)
        assert after["status"] == "changes_requested" and after["feedback"] == feedback

    def test_reject_drops_the_call_and_a_stranger_cannot_see_it(
        self, running: RunningStack, context: BrowserContext, session_factory: sessionmaker[Session]
    ) -> None:
        user = make_user(session_factory)
        session_id, job_id = _waiting_turn(
            running, user, _write_script("run.sh", "rm -rf data\n", then="ok, not doing it")
        )
        stranger = context.browser.new_context() if context.browser else None
        assert stranger is not None
        try:
            other = login(
                stranger, running.url, make_user(session_factory).key, f"/approvals?job={job_id}"
            )
            expect(other.get_by_test_id("approvals-error")).to_contain_text("not found")
            expect(other.get_by_test_id("approval")).to_have_count(0)
            bad = other.goto(f"{running.url}/approvals?job=not-a-uuid")
            assert bad is not None and bad.status == 422
        finally:
            stranger.close()

        page = login(context, running.url, user.key, next_path=f"/approvals?job={job_id}")
        card = _approval_card(page, job_id)
        expect(card.get_by_test_id("approval-diff")).to_contain_text("+rm -rf data")
        card.get_by_test_id("approval-reject").click()
        expect(card.get_by_test_id("approval-outcome")).to_contain_text(
            "Job succeeded", timeout=JOB_TIMEOUT_MS
        )
        expect(card).to_have_attribute("data-status", "rejected")
        assert not _workspace_file(session_id, "run.sh").exists()
        # Back on the full list, nothing waits any more.
        page.goto(f"{running.url}/approvals")
        expect(page.get_by_test_id("approvals-status")).to_have_text(
            "Nothing is waiting for your approval."
        )
        expect(page.get_by_test_id("approval")).to_have_count(0)

    def test_a_command_in_a_strict_project_is_shown_as_text_and_rejected_with_feedback(
        self, running: RunningStack, context: BrowserContext, session_factory: sessionmaker[Session]
    ) -> None:
        user = make_user(session_factory)
        project = make_project(session_factory, user)
        with session_factory() as db, db.begin():
            db.execute(
                update(Project).where(Project.name == project).values(approval_mode="strict")
            )
        command = "echo '<img src=x onerror=window.__xss=3>' > out.html"
        call = {"name": "bash", "arguments": {"command": command}}
        script = {"replies": [{"tool_calls": [call]}, {"content": "skipped"}]}
        session_id, job_id = _waiting_turn(running, user, script, project=project)
        page = login(context, running.url, user.key, next_path="/approvals")
        card = _approval_card(page, job_id)
        expect(card.get_by_test_id("approval-diff")).to_have_text(re.compile(re.escape(command)))
        assert card.locator("img").count() == 0
        card.get_by_test_id("approval-feedback").fill("not now")
        card.get_by_test_id("approval-reject").click()
        expect(card.get_by_test_id("approval-outcome")).to_contain_text(
            "Job succeeded", timeout=JOB_TIMEOUT_MS
        )
        expect(card).to_have_attribute("data-status", "rejected")
        assert not _workspace_file(session_id, "out.html").exists()
        assert page.evaluate("window.__xss") is None
