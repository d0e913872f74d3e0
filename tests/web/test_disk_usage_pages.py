"""Workspace disk usage is shown where people look: the admin users listing (API,
`leaflab admin user list`, the admin page's table) and the chat page's disk meter.

A real API process with small caps (64 MB per workspace, 90 MB per user); the files
are put in the workspaces directly (as the sandbox or the file tools would), since
what is under test is the measuring and the showing, not the writing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from playwright.sync_api import BrowserContext, expect
from sqlalchemy.orm import Session, sessionmaker

from services.cli.main import cli
from services.common.workspace_usage import MB
from tests.conftest import Stack
from tests.fixtures.builders import TestUser, client_for, make_user
from tests.fixtures.processes import Services
from tests.web.browser import login

CAPS_ENV = {"LEAFLAB_SANDBOX_WORKSPACE_MAX_MB": "64", "LEAFLAB_SANDBOX_USER_DISK_MAX_MB": "90"}


@pytest.fixture(scope="module")
def api_url(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    services = Services(stack, tmp_path_factory.mktemp("disk-pages"))
    services.env.update(CAPS_ENV)
    try:
        yield services.api()
    finally:
        services.stop()


def workspaces_dir() -> Path:
    return Path(os.environ["LEAFLAB_HOME"]) / "workspaces"


def session_with_files(url: str, user: TestUser, *sizes: int) -> str:
    """A session (through the API) whose workspace holds files of these sizes."""
    sid = str(client_for(url, user).post("/v1/sessions", json={"title": "disk"}).json()["id"])
    ws = workspaces_dir() / sid / "data"
    ws.mkdir(parents=True)
    for i, size in enumerate(sizes):
        (ws / f"f{i}.bin").write_bytes(b"0" * size)
    return sid


def test_the_admin_listing_reports_each_users_disk(
    api_url: str, session_factory: sessionmaker[Session]
) -> None:
    admin, ana, bo = (make_user(session_factory, admin=a) for a in (True, False, False))
    session_with_files(api_url, ana, 3 * MB, MB // 2)
    session_with_files(api_url, ana, 2 * MB)
    listing = client_for(api_url, admin).get("/v1/admin/users").json()
    by_email = {u["email"]: u for u in listing["items"]}
    assert by_email[ana.email]["disk_bytes"] == 5 * MB + MB // 2  # both sessions together
    assert by_email[bo.email]["disk_bytes"] == 0
    assert listing["user_disk_cap_bytes"] == 90 * MB
    assert listing["workspace_cap_bytes"] == 64 * MB

    out = CliRunner().invoke(
        cli,
        ["admin", "user", "list"],
        env={"LEAFLAB_URL": api_url, "LEAFLAB_API_KEY": admin.key},
    )
    assert out.exit_code == 0, out.output
    line = next(ln for ln in out.output.splitlines() if ana.email in ln)
    assert "disk 5.5 MB / 90.0 MB" in line


def test_the_admin_page_and_the_chat_page_show_disk_usage(
    api_url: str, context: BrowserContext, session_factory: sessionmaker[Session]
) -> None:
    admin, cleo = make_user(session_factory, admin=True), make_user(session_factory)
    sid = session_with_files(api_url, cleo, 6 * MB)
    session_with_files(api_url, cleo, 4 * MB)

    page = login(context, api_url, admin.key, next_path="/admin")
    page.wait_for_selector("body[data-admin-ready='1']")
    row = page.locator(f"tr[data-user='{cleo.email}'] [data-testid=user-disk]")
    expect(row).to_have_text("10.0 MB / 90.0 MB")

    chat = login(context, api_url, cleo.key, next_path=f"/?session={sid}")
    expect(chat.get_by_test_id("bar-disk-text")).to_have_text(
        "6.0 MB / 64.0 MB · all your sessions 10.0 MB / 90.0 MB"
    )
    assert chat.get_by_test_id("bar-disk").get_attribute("value") == str(6 / 64)
