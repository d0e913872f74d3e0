"""An API process with a real library service behind /v1/library.

Route-wide checks (the schemathesis contract, the authorisation matrix) need
the library routes to answer for real, not 503 "library unavailable".
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import Stack
from tests.fixtures.processes import Services
from tests.library.conftest import TOKEN, LibraryProcess


@contextmanager
def api_with_library(stack: Stack, base: Path) -> Iterator[str]:
    """The API's URL; the API and the library share a file store and the token."""
    files = base / "files"
    library = LibraryProcess(base, {"LEAFLAB_FILES_DIR": str(files)})
    svc = Services(stack, base)
    try:
        library.wait_ready()
        svc.env.update(
            {
                "LEAFLAB_LIBRARY_URL": library.url,
                "LEAFLAB_INTERNAL_TOKEN": TOKEN,
                "LEAFLAB_FILES_DIR": str(files),
            }
        )
        yield svc.api()
    finally:
        svc.stop()
        library.stop()
