"""Headless Chromium (Debian's, not a downloaded one) driven by Playwright, for page tests.

Chromium runs with the flags verified on these machines: without the background-
networking ones it keeps dialling Google's hosts, which this network refuses.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from urllib.parse import quote

from playwright.sync_api import Browser, BrowserContext, Page, Playwright

CHROMIUM_FLAGS = [
    "--no-sandbox",  # runs as root in CI; the page under test is our own
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
REPO = Path(__file__).resolve().parents[2]


def chromium_path() -> str | None:
    return os.environ.get("LEAFLAB_CHROMIUM") or shutil.which("chromium")


def launch(playwright: Playwright, executable: str) -> Browser:
    return playwright.chromium.launch(
        executable_path=executable, headless=True, args=CHROMIUM_FLAGS
    )


def screenshot_dir() -> Path:
    """Where page screenshots of this run go (not committed; README links a couple)."""
    out = Path(os.environ.get("LEAFLAB_TEST_OUTPUT", REPO / "test-output")) / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    return out


def login(
    context: BrowserContext,
    base_url: str,
    api_key: str,
    next_path: str = "/",
    lands_on: str | None = None,
) -> Page:
    """Logs in through the real form and returns the page, now on ``lands_on``
    (by default ``next_path``)."""
    page = context.new_page()
    page.goto(f"{base_url}/login?next={quote(next_path, safe='')}")
    page.fill("#api_key", api_key)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base_url}{lands_on or next_path}")
    return page
