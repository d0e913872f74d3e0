"""A sandbox worker beside the module's ``running`` stack, for pages that show code output.

The chat page's python tool runs on a sandbox worker: the real Docker daemon, the real
image (``leaflab sandbox build-image --offline`` builds it; the first use builds it
otherwise) and a real Celery sandbox worker on the stack's Redis. As in tests/sandbox,
a missing Docker fails the test rather than skipping it, so CI cannot pass without it.

Import the fixture into a test module (``from tests.web.sandbox_stack import
sandbox_worker_for_pages``) and request it beside ``running``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from services.sandbox.image import ensure_image
from services.sandbox.settings import SandboxSettings, get_sandbox_settings
from tests.conftest import Stack
from tests.sandbox.conftest import (
    SANDBOX_ENV,
    WorkerProc,
    require_docker,
    start_worker,
    stop_worker,
)


@pytest.fixture(scope="module")
def sandbox_worker_for_pages(
    stack: Stack, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerProc]:
    """A sandbox worker taking ``sandbox`` tasks from the stack's Redis, ready (pool warm)."""
    require_docker("to run the python tool")
    # The worker process reads its limits from the environment; restored afterwards so
    # later modules' processes start as before.
    saved = {k: os.environ.get(k) for k in SANDBOX_ENV}
    os.environ.update(SANDBOX_ENV)
    get_sandbox_settings.cache_clear()
    try:
        ensure_image(SandboxSettings())
        worker = start_worker(tmp_path_factory.mktemp("page-sandbox"), stack.redis_url)
        try:
            yield worker
        finally:
            stop_worker(worker)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        get_sandbox_settings.cache_clear()
