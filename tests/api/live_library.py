"""An API process with a real library service behind /v1/library.

Route-wide checks (the schemathesis contract, the authorisation matrix) and the
library page need the library routes to answer for real, not 503 "library
unavailable". Both run on the run's isolated Redis db (``library_services``):
on the shared one the library tests' session-wide library service would take
some of these ingestion tasks and write the vectors to its own store, leaving a
"ready" document that search here never finds (seen in full CI runs).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import Stack
from tests.fixtures.library_services import library_services


@contextmanager
def api_with_library(
    stack: Stack, base: Path, isolated_redis_url: str, env: dict[str, str] | None = None
) -> Iterator[str]:
    """The API's URL; the API and the library share a file store, the token and a Redis db
    (``env``: more settings for the API process)."""
    with library_services(stack, base, isolated_redis_url) as (svc, _library):
        svc.env.update(env or {})
        yield svc.api()
