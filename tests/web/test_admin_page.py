"""The admin dashboard in Chromium: budgets edited inline move the spend chart, a new
key is shown once, keys are revoked, queues/workers/breakers show, user data stays text."""

from __future__ import annotations

import json
import time

import httpx
import redis
from playwright.sync_api import BrowserContext, Page, expect
from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts.keys import breaker
from tests.conftest import Stack
from tests.fixtures.builders import TestUser, client_for, make_user, wait_job
from tests.fixtures.processes import RunningStack
from tests.web.browser import login, screenshot_dir
from tests.worker.mcp.conftest import clear_stored_list

XSS_IMG = '<img src=x onerror="window.__xss=1">'
XSS_SCRIPT = "<script>window.__xss=1</script>"
XSS_EMAIL = "<img/src=x/onerror=window.__xss=1>@lab.test"


def _chart(page: Page, by: str) -> dict[str, float]:
    """What the chart draws: label → value of its first dataset (spent US$)."""
    canvas = page.locator(f"canvas[data-testid=spend-chart][data-by={by}]")
    labels = json.loads(canvas.get_attribute("data-labels") or "[]")
    values = json.loads(canvas.get_attribute("data-values") or "[]")
    return dict(zip(labels, values, strict=True))


def _budget_bar(page: Page, email: str) -> float | None:
    """The user's budget bar, read from the live Chart.js instance."""
    return page.evaluate(
        """(email) => {
            const chart = Chart.getChart(document.querySelector(
                'canvas[data-testid=spend-chart][data-by=user]'));
            const i = chart.data.labels.indexOf(email);
            return i < 0 ? null : chart.data.datasets[1].data[i];
        }""",
        email,
    )


def _open_admin(context: BrowserContext, url: str, admin: TestUser) -> Page:
    page = login(context, url, admin.key, next_path="/admin")
    page.wait_for_selector("body[data-admin-ready='1']")
    return page


class TestBudgetsAndSpend:
    def test_raising_a_budget_resumes_the_paused_job_and_the_spend_chart_shows_its_cost(
        self, running: RunningStack, context: BrowserContext, session_factory: sessionmaker[Session]
    ) -> None:
        admin = make_user(session_factory, admin=True)
        erin = make_user(session_factory)
        admin_api = client_for(running.url, admin)
        assert (
            admin_api.put(
                "/v1/admin/budgets", json={"user_email": erin.email, "usd": 0, "period": "total"}
            ).status_code
            == 200
        )
        client = client_for(running.url, erin)
        session = client.post("/v1/sessions", json={}).json()
        running.sim.set_script(session["id"], {"replies": [{"content": "paid for"}]})
        job_id = client.post(
            f"/v1/sessions/{session['id']}/messages", json={"content": "hi"}
        ).json()["job_id"]
        paused = wait_job(client, job_id, statuses=("budget_exhausted", "succeeded", "failed"))
        assert paused["status"] == "budget_exhausted"

        page = _open_admin(context, running.url, admin)
        assert _chart(page, "user").get(erin.email) == 0  # a budget, nothing spent yet
        assert _budget_bar(page, erin.email) == 0
        form = page.locator(f"[data-testid=budget-form][data-target='{erin.email}']")
        # A $0 limit can never run a call: the row says what the paused job's call needs.
        budgets = admin_api.get("/v1/admin/budgets").json()["items"]
        mine = next(b for b in budgets if b["user_email"] == erin.email)
        assert mine["paused_jobs"] == 1 and mine["next_call_usd"] > 0, mine
        expect(form.get_by_test_id("budget-need")).to_contain_text(
            f"1 paused job(s): the next call needs up to ${mine['next_call_usd']:.4f}"
        )
        form.locator("input[name=usd]").fill("10")
        form.get_by_role("button", name="Save").click()
        expect(form.locator(".saved")).to_contain_text("1 paused job(s) resumed")
        page.wait_for_function(
            """(email) => { const c = Chart.getChart(document.querySelector(
                 'canvas[data-testid=spend-chart][data-by=user]'));
                 return c.data.datasets[1].data[c.data.labels.indexOf(email)] === 10; }""",
            arg=erin.email,
        )
        assert wait_job(client, job_id)["status"] == "succeeded"
        # The page refreshes itself: the job's cost arrives in the chart and top jobs.
        page.wait_for_function(
            """(email) => { const c = document.querySelector(
                 'canvas[data-testid=spend-chart][data-by=user]');
                 const d = JSON.parse(c.dataset.labels || '[]');
                 const v = JSON.parse(c.dataset.values || '[]');
                 return v[d.indexOf(email)] > 0; }""",
            arg=erin.email,
            timeout=20_000,
        )
        spent = admin_api.get("/v1/admin/spend", params={"by": "user"}).json()["items"]
        assert abs(_chart(page, "user")[erin.email] - _row(spent, erin.email)) < 1e-9
        # Earlier tests in the run may hold costlier jobs: the page shows the API's top ten,
        # with this job among them when it ranks there.
        top = admin_api.get("/v1/admin/top-jobs", params={"limit": 10}).json()["items"]
        ranked = [str(j["job_id"]) for j in top]
        shown = job_id if job_id in ranked else ranked[0]
        expect(page.get_by_test_id("top-jobs")).to_contain_text(shown[:8])
        expect(
            page.locator(f"[data-testid=budget-form][data-target='{erin.email}']")
        ).to_contain_text("spent $")
        assert any(v > 0 for v in _chart(page, "model").values())
        assert _chart(page, "day")  # today's spend is on the time axis
        page.screenshot(path=str(screenshot_dir() / "admin.png"), full_page=True)

    def test_a_bad_budget_is_refused_with_its_message(
        self, running: RunningStack, context: BrowserContext, session_factory: sessionmaker[Session]
    ) -> None:
        admin = make_user(session_factory, admin=True)
        target = make_user(session_factory)
        client_for(running.url, admin).put(
            "/v1/admin/budgets", json={"user_email": target.email, "usd": 3}
        )
        page = _open_admin(context, running.url, admin)
        form = page.locator(f"[data-testid=budget-form][data-target='{target.email}']")
        form.locator("input[name=tokens]").evaluate("(i) => { i.min = ''; i.value = '-5'; }")
        form.get_by_role("button", name="Save").click()
        expect(page.get_by_test_id("admin-error")).to_contain_text("tokens")
        budgets = client_for(running.url, admin).get("/v1/admin/budgets").json()["items"]
        mine = next(b for b in budgets if b["user_email"] == target.email)
        assert mine["token_limit"] is None and mine["usd_limit"] == 3

    def test_a_sub_cent_budget_is_saved_from_the_page(
        self, running: RunningStack, context: BrowserContext, session_factory: sessionmaker[Session]
    ) -> None:
        # A small model's call costs fractions of a cent: the browser must not refuse
        # $0.0015 as "not a multiple of 0.01" (the old step), new or edited.
        admin = make_user(session_factory, admin=True)
        target = make_user(session_factory)
        client_for(running.url, admin).put(
            "/v1/admin/budgets", json={"user_email": target.email, "usd": 0.0042}
        )
        page = _open_admin(context, running.url, admin)
        form = page.locator(f"[data-testid=budget-form][data-target='{target.email}']")
        form.locator("input[name=usd]").fill("0.0015")
        form.get_by_role("button", name="Save").click()
        api = client_for(running.url, admin)

        def limit() -> float | None:
            budgets = api.get("/v1/admin/budgets").json()["items"]
            return next(b["usd_limit"] for b in budgets if b["user_email"] == target.email)

        deadline = time.monotonic() + 15
        while limit() != 0.0015 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert limit() == 0.0015
        assert form.locator("input[name=usd]").evaluate("(i) => i.validity.valid")


def _row(items: list[dict], key: str) -> float:
    return float(next(i["cost_usd"] for i in items if i["key"] == key))


class TestKeys:
    def test_a_new_key_is_shown_once_works_and_can_be_revoked(
        self, running: RunningStack, context: BrowserContext, session_factory: sessionmaker[Session]
    ) -> None:
        admin = make_user(session_factory, admin=True)
        frank = make_user(session_factory)
        page = _open_admin(context, running.url, admin)
        page.get_by_role("button", name=f"Keys of {frank.email}").click()
        panel = page.get_by_test_id("keys-panel")
        panel.get_by_label("Key name").fill(XSS_SCRIPT)
        panel.get_by_role("button", name="Create key").click()
        shown = page.get_by_test_id("new-key-value").inner_text()
        assert shown.startswith("lf_")
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=running.url)
        page.get_by_test_id("new-key-copy").click()
        expect(page.get_by_test_id("new-key-copy")).to_have_text("Copied")
        assert page.evaluate("navigator.clipboard.readText()") == shown
        assert (
            httpx.get(
                f"{running.url}/v1/sessions", headers={"Authorization": f"Bearer {shown}"}
            ).status_code
            == 200
        )
        expect(panel.get_by_test_id("keys")).to_contain_text(XSS_SCRIPT)  # the name, as text
        page.reload()
        page.wait_for_selector("body[data-admin-ready='1']")
        assert shown not in page.content()
        assert page.get_by_test_id("new-key").is_hidden()
        page.get_by_role("button", name=f"Keys of {frank.email}").click()
        row = page.locator("[data-testid=keys] tr", has_text=shown[:8])
        page.on("dialog", lambda dialog: dialog.accept())
        row.get_by_role("button", name="Revoke").click()
        expect(row).to_contain_text("revoked")
        assert (
            httpx.get(
                f"{running.url}/v1/sessions", headers={"Authorization": f"Bearer {shown}"}
            ).status_code
            == 401
        )
        assert shown not in page.content()
        assert page.evaluate("window.__xss") is None


class TestOpsAndEscaping:
    def test_queues_workers_breakers_and_hostile_names_show_as_text(
        self,
        running: RunningStack,
        context: BrowserContext,
        session_factory: sessionmaker[Session],
        stack: Stack,
    ) -> None:
        admin = make_user(session_factory, admin=True)
        client_for(running.url, admin).post("/v1/admin/users", json={"email": XSS_EMAIL})
        circuit = breaker("http://model.test/v1", XSS_IMG)
        store = redis.Redis.from_url(stack.redis_url)
        store.hset(circuit, mapping={"state": "open", "failures": 3, "opened_at": 0})
        try:
            page = _open_admin(context, running.url, admin)
            expect(page.locator("#users")).to_contain_text(XSS_EMAIL)
            breakers = page.get_by_test_id("breakers")
            expect(breakers).to_contain_text(XSS_IMG)
            expect(breakers.locator("tr", has_text=XSS_IMG)).to_contain_text("open")
            queues = page.get_by_test_id("queue-depths")
            for name in ("agent", "sandbox", "library"):
                expect(queues.locator(f"tr[data-queue={name}]")).to_be_visible()
            # The stack's worker answers Celery's broadcast with the queue it consumes.
            expect(page.get_by_test_id("workers")).to_contain_text("agent", timeout=15_000)
            assert page.evaluate("window.__xss") is None
        finally:
            store.delete(circuit)


class TestMcpServers:
    def test_the_list_is_edited_as_json_and_bad_entries_are_shown(
        self, running: RunningStack, context: BrowserContext, session_factory: sessionmaker[Session]
    ) -> None:
        admin = make_user(session_factory, admin=True)
        clear_stored_list(session_factory)
        try:
            page = _open_admin(context, running.url, admin)
            page.wait_for_selector("body[data-mcp-ready='1']")
            section = page.get_by_test_id("mcp-servers")
            expect(page.get_by_test_id("mcp-source")).to_contain_text("From LEAFLAB_MCP_SERVERS")
            textarea, error = page.get_by_test_id("mcp-json"), page.get_by_test_id("mcp-error")

            textarea.fill('[{"name": "x", "command": []}]')
            page.get_by_test_id("mcp-save").click()
            expect(error).to_be_visible()
            expect(error).to_contain_text("servers[0] ('x')")
            expect(error).to_contain_text("'command' must name a program")
            textarea.fill("[{not json")
            page.get_by_test_id("mcp-save").click()
            expect(error).to_contain_text("Not valid JSON")
            api = client_for(running.url, admin)
            assert api.get("/v1/admin/mcp-servers").json()["source"] == "environment"

            hostile_url = f"https://n.lab/{XSS_IMG}"
            textarea.fill(json.dumps([
                {"name": "clock", "command": ["mcp-server-time"], "projects": ["thesis"]},
                {"name": "wiki", "url": hostile_url, "approval": True},
            ]))  # fmt: skip
            page.get_by_test_id("mcp-save").click()
            expect(page.get_by_test_id("mcp-source")).to_contain_text("Stored list")
            expect(error).to_be_hidden()
            clock = section.locator("tr[data-server=clock]")
            expect(clock).to_contain_text("stdio: mcp-server-time")
            expect(clock).to_contain_text("sandbox")
            expect(clock).to_contain_text("thesis")
            expect(section.locator("tr[data-server=wiki]")).to_contain_text(hostile_url)
            stored = api.get("/v1/admin/mcp-servers").json()
            assert stored["source"] == "database"
            assert [s["name"] for s in stored["servers"]] == ["clock", "wiki"]
            assert page.evaluate("window.__xss") is None

            page.get_by_test_id("mcp-clear").click()
            expect(page.get_by_test_id("mcp-source")).to_contain_text("From LEAFLAB_MCP_SERVERS")
            expect(section.locator("tr[data-server=clock]")).to_have_count(0)
            assert api.get("/v1/admin/mcp-servers").json()["source"] == "environment"
        finally:
            clear_stored_list(session_factory)
