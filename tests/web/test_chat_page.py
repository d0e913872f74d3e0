"""The chat page in Chromium: sessions, a streamed answer with tool cards, todos, usage,
a python plot inline and its files downloadable, slash commands (``/compact``, skills)
offered from the input, and hostile text shown as text."""

from __future__ import annotations

import os
import re
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import BrowserContext, Page, expect
from sqlalchemy.orm import Session, sessionmaker

from tests.fixtures.builders import TestUser, client_for, make_project, make_user
from tests.fixtures.processes import RunningStack
from tests.web.browser import login, screenshot_dir
from tests.web.sandbox_stack import sandbox_worker_for_pages  # noqa: F401 - a fixture

XSS_IMG = '<img src=x onerror="window.__xss=1">'
XSS_SCRIPT = "<script>window.__xss=1</script>"

ANSWER = "The notes say k_p = 2.5, and the loop is stable."
# Each answer names the model that wrote it (the simulator here).
MODEL_TAG = "model: leaflab-sim"
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


PLOT_CODE = """
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
xs = [i / 10 for i in range(100)]
plt.figure(figsize=(4, 3), dpi=80)
plt.plot(xs, [x * x for x in xs])
plt.savefig("parabola.png")
with open("parabola.csv", "w") as f:
    f.writelines(f"{x},{x * x}\\n" for x in xs)
print("saved")
"""
PLOT_SCRIPT = {
    "latency_ms": 10,
    "replies": [
        {"tool_calls": [{"name": "python", "arguments": {"code": PLOT_CODE, "timeout": 60}}]},
        {"content": "Here is the parabola."},
    ],
}
SKILL = "---\nname: units\ndescription: How to report physical units\n---\nAlways use SI."
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


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
        expect(streamed).to_have_text(f"Assistant{ANSWER}{MODEL_TAG}", timeout=30_000)
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
        # No budget set: no scale, so no bar that is always full; the text says why.
        expect(page.locator("#bar-session-text")).to_contain_text("no budget set")
        expect(page.get_by_test_id("bar-session")).to_be_hidden()
        expect(page.get_by_test_id("bar-turn")).to_be_hidden()
        expect(page.get_by_test_id("bar-context")).to_be_visible()
        page.screenshot(path=str(screenshot_dir() / "chat.png"), full_page=True)

        # A reload rebuilds the same conversation from the API.
        page.reload()
        expect(page.get_by_test_id("message-assistant")).to_have_text(
            [f"Assistant{ANSWER}{MODEL_TAG}"]
        )
        expect(page.get_by_test_id("tool-card")).to_have_count(2)
        expect(page.get_by_test_id("message-user")).to_have_text(["YouWrite k_p to notes"])

    def test_a_turn_paused_for_its_budget_says_so_and_resumes_after_a_raise(
        self, running: RunningStack, context: BrowserContext, session_factory: sessionmaker[Session]
    ) -> None:
        hana = make_user(session_factory)
        admin = client_for(running.url, make_user(session_factory, admin=True))
        admin.put("/v1/admin/budgets", json={"user_email": hana.email, "usd": 0})
        session_id = _scripted_session(
            running, hana, {"replies": [{"content": "Resumed and answered."}]}, "paused"
        )
        page = _open(context, running, hana, session_id)
        page.get_by_test_id("chat-input").fill("hello")
        page.get_by_test_id("chat-send").click()
        notice = page.get_by_test_id("budget-notice")
        expect(notice).to_contain_text("Paused: your budget is used up.", timeout=30_000)
        expect(notice).to_contain_text("An admin can raise it")
        expect(page.get_by_test_id("turn-status")).to_have_text("paused: budget used up")
        # A reload while paused shows the same notice (the page follows the paused turn).
        page.reload()
        expect(page.get_by_test_id("budget-notice")).to_have_count(1, timeout=30_000)
        admin.put("/v1/admin/budgets", json={"user_email": hana.email, "usd": 5})
        answer = page.locator("[data-testid=message-assistant]", has_text="Resumed and answered.")
        expect(answer).to_have_count(1, timeout=30_000)
        expect(page.get_by_test_id("budget-notice")).to_have_count(0)
        expect(page.get_by_test_id("turn-status")).to_have_text("succeeded")
        # With a budget, the session's bar is shown against it.
        expect(page.get_by_test_id("bar-session")).to_be_visible()
        expect(page.locator("#bar-session-text")).to_contain_text("budget left")

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
        expect(answer).to_have_text(f"AssistantHere it is: {hostile}{MODEL_TAG}", timeout=30_000)
        read = page.get_by_test_id("tool-card").nth(1)
        expect(read.get_by_test_id("tool-status")).to_have_text("succeeded")
        read.locator("summary").click()
        expect(read.get_by_test_id("tool-result")).to_contain_text(XSS_SCRIPT)
        page.reload()
        expect(page.get_by_test_id("message-user").last).to_have_text(f"You{hostile}")
        expect(page.get_by_test_id("message-assistant")).to_have_text(
            [f"AssistantHere it is: {hostile}{MODEL_TAG}"]
        )
        assert page.locator("#messages img, #messages script, #session-list img").count() == 0
        assert page.evaluate("window.__xss") is None

    def test_the_sidebar_lists_conversations_and_survey_sessions_only_when_asked(
        self, running: RunningStack, context: BrowserContext, session_factory: sessionmaker[Session]
    ) -> None:
        ines = make_user(session_factory)
        with client_for(running.url, ines) as client:
            chat = client.post("/v1/sessions", json={"title": "a conversation"}).json()["id"]
            survey = client.post(
                "/v1/jobs", json={"kind": "survey", "input": {"topic": "sidebar topic"}}
            ).json()
            client.post(f"/v1/jobs/{survey['id']}/cancel")
        page = _open(context, running, ines, chat)
        items = page.get_by_test_id("session-item")
        expect(items.filter(has_text="a conversation")).to_have_count(1)
        expect(items.filter(has_text="sidebar topic")).to_have_count(0)
        page.get_by_test_id("show-all-sessions").check()
        expect(items.filter(has_text="sidebar topic")).to_have_count(1)

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


class TestPythonPlot:
    @pytest.mark.usefixtures("sandbox_worker_for_pages")
    def test_a_python_tool_plot_shows_inline_and_its_files_download(
        self, running: RunningStack, context: BrowserContext, member: TestUser
    ) -> None:
        session_id = _scripted_session(running, member, PLOT_SCRIPT, "parabola")
        page = _open(context, running, member, session_id)
        page.get_by_test_id("chat-input").fill("Plot x squared")
        page.get_by_test_id("chat-send").click()
        expect(page.get_by_test_id("turn-status")).to_have_text("succeeded", timeout=120_000)
        card = page.get_by_test_id("tool-card")
        expect(card.get_by_test_id("tool-name")).to_have_text("python")
        expect(card.get_by_test_id("tool-status")).to_have_text("succeeded")
        card.locator("summary").click()
        expect(card.get_by_test_id("tool-result")).to_contain_text("saved")

        image = page.get_by_test_id("artifact-image")
        expect(image).to_have_attribute("alt", "parabola.png")
        image.scroll_into_view_if_needed()
        expect(image).to_be_visible()
        page.wait_for_function(
            "() => { const i = document.querySelector('[data-testid=artifact-image]');"
            " return i && i.complete && i.naturalWidth > 0; }"
        )
        assert image.evaluate("i => [i.naturalWidth, i.naturalHeight]") == [320, 240]
        page.screenshot(path=str(screenshot_dir() / "chat-python-plot.png"), full_page=True)

        with page.expect_download() as png_download:
            page.get_by_role("link", name="parabola.png").click()
        assert png_download.value.suggested_filename == "parabola.png"
        assert Path(png_download.value.path()).read_bytes()[:8] == PNG_MAGIC
        with page.expect_download() as csv_download:
            page.get_by_test_id("artifact-file").filter(has_text="parabola.csv").click()
        assert csv_download.value.suggested_filename == "parabola.csv"
        assert (
            Path(csv_download.value.path()).read_text().splitlines()[1]
            == "0.1,0.010000000000000002"
        )

        # A reload shows the same plot from the job's artifacts.
        page.reload()
        expect(page.get_by_test_id("artifact-image")).to_have_count(1)


class TestSlashCommands:
    def test_slash_lists_commands_a_skill_runs_and_compact_summarises(
        self,
        running: RunningStack,
        context: BrowserContext,
        member: TestUser,
        session_factory: sessionmaker[Session],
    ) -> None:
        project = make_project(session_factory, member)
        with client_for(running.url, member) as client:
            session = client.post(
                "/v1/sessions", json={"title": "units", "project": project}
            ).json()
        home = Path(os.environ["LEAFLAB_HOME"])
        skill = home / "projects" / str(session["project_id"]) / "skills" / "units"
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text(SKILL)
        (skill.parent / "broken").mkdir()
        (skill.parent / "broken" / "SKILL.md").write_text("no front matter: never offered")
        session_id = str(session["id"])
        replies = [{"content": "3 miles is 4.83 km."}, {"content": "Compacted; go on."}]
        running.sim.set_script(session_id, {"latency_ms": 10, "replies": replies})
        running.sim.set_script(f"{session_id}:summary", {"replies": [{"content": "Miles to km."}]})
        page = _open(context, running, member, session_id)
        box = page.get_by_test_id("chat-input")

        box.press_sequentially("/")
        listbox = page.get_by_role("listbox", name="Slash commands")
        options = listbox.get_by_role("option")
        expect(options).to_have_text(
            [re.compile(r"^/compact"), re.compile(r"^/unitsHow to report physical units$")]
        )
        expect(options.nth(0)).to_have_attribute("aria-selected", "true")
        expect(box).to_have_attribute(
            "aria-activedescendant", options.nth(0).get_attribute("id") or ""
        )
        box.press("ArrowDown")
        expect(options.nth(1)).to_have_attribute("aria-selected", "true")
        expect(options.nth(0)).to_have_attribute("aria-selected", "false")
        expect(box).to_have_attribute(
            "aria-activedescendant", options.nth(1).get_attribute("id") or ""
        )
        box.press("Enter")  # picks the option, does not send
        expect(listbox).to_be_hidden()
        expect(box).to_have_value("/units ")
        box.press_sequentially("convert 3 miles")
        box.press("Enter")
        answer = page.locator("[data-testid=message-assistant][data-streamed=true]")
        expect(answer).to_have_text(f"Assistant3 miles is 4.83 km.{MODEL_TAG}", timeout=30_000)
        expect(page.get_by_test_id("turn-status")).to_have_text("succeeded")
        sim = running.sim.url.removesuffix("/v1")
        seen = httpx.get(f"{sim}/_sim/requests", params={"key": session_id}, timeout=5).json()
        last_user = seen["items"][0]["messages"][-1]["content"]
        assert last_user.startswith("/units convert 3 miles") and "Always use SI." in last_user

        # Escape closes the list; a partial command narrows it; Enter completes, Enter sends.
        box.press_sequentially("/")
        expect(listbox).to_be_visible()
        box.press("Escape")
        expect(listbox).to_be_hidden()
        box.press_sequentially("co")
        expect(options).to_have_text([re.compile(r"^/compact")])
        box.press("Enter")
        expect(box).to_have_value("/compact ")
        box.press("Enter")
        notice = page.get_by_test_id("compaction")
        expect(notice).to_contain_text(re.compile(r"Conversation compacted: \d+ → \d+ tokens"))
        expect(answer.last).to_have_text(f"AssistantCompacted; go on.{MODEL_TAG}", timeout=30_000)
        expect(page.get_by_test_id("turn-status")).to_have_text("succeeded")
        notice.locator("summary").click()
        expect(notice.get_by_test_id("compaction-summary")).to_have_text("Miles to km.")

        page.reload()
        expect(page.get_by_test_id("compaction")).to_have_count(1)
        expect(page.get_by_test_id("compaction-summary")).to_have_text("Miles to km.")
        expect(page.get_by_test_id("message-user")).to_have_text(
            ["You/units convert 3 miles", "You/compact "]
        )


def test_commands_route_hides_other_users_sessions(
    running: RunningStack, member: TestUser, session_factory: sessionmaker[Session]
) -> None:
    with client_for(running.url, member) as client:
        session_id = client.post("/v1/sessions", json={}).json()["id"]
        own = client.get(f"/v1/sessions/{session_id}/commands")
        assert own.status_code == 200
        assert own.json()["items"][0] == {
            "command": "/compact",
            "description": "Summarise the conversation so far to free the context window",
            "kind": "builtin",
        }
        assert client.get("/v1/sessions/not-a-uuid/commands").status_code == 404
    with client_for(running.url, make_user(session_factory)) as stranger:
        other = stranger.get(f"/v1/sessions/{session_id}/commands")
        assert other.status_code == 404 and other.json()["error"]["code"] == "not_found"
