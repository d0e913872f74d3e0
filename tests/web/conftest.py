"""Fixtures for page tests: one Chromium per run, a fresh browser context per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, BrowserContext, expect, sync_playwright

from tests.fixtures.opt_outs import BROWSER
from tests.web.browser import chromium_path, launch

# Pages refresh on timers (the admin page every 5 s); on a loaded machine an assertion's
# default 5 s can miss one refresh. Waiting longer costs nothing when the page is right.
expect.set_options(timeout=20_000)


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    BROWSER.skip_if_opted_out()
    executable = chromium_path()
    if executable is None:
        BROWSER.missing("chromium is not installed")
    with sync_playwright() as playwright:
        chromium = launch(playwright, executable)
        yield chromium
        chromium.close()


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    ctx = browser.new_context(viewport={"width": 1366, "height": 800})
    yield ctx
    ctx.close()
