"""The chat page in Chromium: sessions, a streamed answer with tool cards, todos, usage,
artifacts inline, and hostile text shown as text."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import BrowserContext, Page, expect
from sqlalchemy.orm import Session, sessionmaker

from tests.fixtures.builders import TestUser, client_for, make_user
from tests.fixtures.processes import RunningStack
from tests.web.browser import login, screenshot_dir

XSS_IMG = '<img src=x onerror="window.__xss=1">'
XSS_SCRIPT = "<script>window.__xss=1</script>"

ANSWER = "The notes say k_p = 2.5, and the loop is stable."
TOOL_SCRIPT = {
    "latency_ms": 20,
    "replies": [
        {
            "tool_calls": [
                {
                    "name": "todo",
                    "arguments": {
                        "items": [
                            {"content": "write the notes", "status": "completed"},
                            {"content": "check them", "status": "in_progress"},
                        ]
                    },
                }
            ]
        },
        {
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "notes.md", "content": "k_p = 2.5\n"}}
            ]
        },
        {"content": ANSWER},
    ],
}


@pytest.fixture(scope="module")
def member(session_factory: sessionmaker[Session]) -> TestUser:
    return make_user(session_factory)


def _scripted_session(running: RunningStack, user: TestUser, script: dict, title: str) -> str:
    with client_for(running.url, user) as client:
        session = client.post("/v1/sessions", json={"title": title}).json()
    running.sim.set_script(session["id"], script)
    return str(session["id"])


def _open(context: BrowserContext, running: RunningStack, user: TestUser, session_id: str) -> Page:
    return login(context, running.url, user.key, next_path=f"/?session={session_id}")


class TestChat:
    def test_a_turn_streams_its_answer_with_tool_cards_todos_and_usage(
        self, running: RunningStack, context: BrowserContext, member: TestUser
    ) -> None:
        session_id = _scripted_session(running, member, TOOL_SCRIPT, "pid notes")
        page = _open(context, running, member, session_id)
        expect(page.get_by_test_id("session-title")).to_have_text("pid notes")
        page.get_by_test_id("chat-input").fill("Write k_p to notes")
        page.get_by_test_id("chat-send").click()

        streamed = page.locator("[data-testid=message-assistant][data-streamed=true]")
        expect(streamed).to_have_text(f"Assistant{ANSWER}", timeout=30_000)
        cards = page.get_by_test_id("tool-card")
        expect(cards).to_have_count(2)
        write = cards.nth(1)
        expect(write.get_by_test_id("tool-name")).to_have_text("write_file")
        expect(write.get_by_test_id("tool-status")).to_have_text("succeeded")
        expect(write.get_by_test_id("tool-duration")).to_have_text(re.compile(r"^\d+(\.\d+)? m?s$"))
        assert not write.evaluate("d => d.open")  # collapsed until clicked
        write.locator("summary").click()
        expect(write.get_by_test_id("tool-args")).to_contain_text('"path": "notes.md"')
        expect(write.get_by_test_id("tool-result")).not_to_be_empty()
        expect(page.get_by_test_id("todo-item")).to_have_text(["✓ write the notes", "▶ check them"])
        expect(page.get_by_test_id("turn-status")).to_have_text("succeeded")
        expect(page.locator("#bar-session-text")).to_contain_text("in 1 turns")
        page.screenshot(path=str(screenshot_dir() / "chat.png"), full_page=True)

        # A reload rebuilds the same conversation from the API.
        page.reload()
        expect(page.get_by_test_id("message-assistant")).to_have_text([f"Assistant{ANSWER}"])
        expect(page.get_by_test_id("tool-card")).to_have_count(2)
        expect(page.get_by_test_id("message-user")).to_have_text(["YouWrite k_p to notes"])

    def test_hostile_titles_messages_and_tool_output_show_as_text(
        self, running: RunningStack, context: BrowserContext, member: TestUser
    ) -> None:
        hostile = f"{XSS_IMG} {XSS_SCRIPT}"
        script = {
            "latency_ms": 10,
            "replies": [
                {
                    "tool_calls": [
                        {"name": "write_file", "arguments": {"path": "x.md", "content": hostile}}
                    ]
                },
                {"tool_calls": [{"name": "read_file", "arguments": {"path": "x.md"}}]},
                {"content": f"Here it is: {hostile}"},
            ],
        }
        session_id = _scripted_session(running, member, script, hostile)
        page = _open(context, running, member, session_id)
        expect(page.get_by_test_id("session-title")).to_have_text(hostile)
        page.get_by_test_id("chat-input").fill(hostile)
        page.get_by_test_id("chat-send").click()
        answer = page.locator("[data-testid=message-assistant][data-streamed=true]")
        expect(answer).to_have_text(f"AssistantHere it is: {hostile}", timeout=30_000)
        read = page.get_by_test_id("tool-card").nth(1)
        expect(read.get_by_test_id("tool-status")).to_have_text("succeeded")
        read.locator("summary").click()
        expect(read.get_by_test_id("tool-result")).to_contain_text(XSS_SCRIPT)
        page.reload()
        expect(page.get_by_test_id("message-user").last).to_have_text(f"You{hostile}")
        expect(page.get_by_test_id("message-assistant")).to_have_text(
            [f"AssistantHere it is: {hostile}"]
        )
        assert page.locator("#messages img, #messages script, #session-list img").count() == 0
        assert page.evaluate("window.__xss") is None

    def test_sessions_can_be_created_renamed_and_deleted(
        self, running: RunningStack, context: BrowserContext, member: TestUser
    ) -> None:
        page = login(context, running.url, member.key)
        page.get_by_test_id("new-session").click()
        page.wait_for_url(re.compile(r"/\?session="))
        session_id = page.url.split("session=")[1]
        item = page.locator(f"[data-testid=session-item][data-session-id='{session_id}']")
        expect(item).to_have_text(re.compile("New session"))
        item.get_by_test_id("session-rename").click()
        page.fill("#rename-input", "PID tuning")
        page.get_by_role("button", name="Save").click()
        expect(item.locator("a")).to_have_text("PID tuning")
        expect(page.get_by_test_id("session-title")).to_have_text("PID tuning")
        with client_for(running.url, member) as client:
            assert client.get(f"/v1/sessions/{session_id}").json()["title"] == "PID tuning"
            page.once("dialog", lambda d: d.accept())
            item.get_by_test_id("session-delete").click()
            page.wait_for_url(f"{running.url}/")
            assert client.get(f"/v1/sessions/{session_id}").status_code == 404
        expect(page.locator(f"[data-session-id='{session_id}']")).to_have_count(0)
