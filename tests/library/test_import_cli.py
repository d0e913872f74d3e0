"""`leaflab library import` and `leaflab library export` as real processes against a
real API and library service: the summary printed, a re-import all matched, a file
that is no bibliography refused with exit 1 and the server's reason, and the
export a BibTeX file that reads back with every document."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker

from services.common.bibliography import read_bibliography
from tests.api.live_library import api_with_library
from tests.conftest import Stack
from tests.fixtures.builders import make_project, make_user

ROOT = Path(__file__).resolve().parents[2]
ENTRY_POINT = "import sys; from services.cli.main import cli; sys.argv[0] = 'leaflab'; cli()"
BIB = """@string{cacm = {Communications of the ACM}}
@article{hoare1969, author = {Hoare, C. A. R.}, title = {An Axiomatic Basis for Computer
  Programming}, journal = cacm, year = 1969, month = oct, doi = {10.1145/363235.363259}}
@article{dijkstra1968, author = {Dijkstra, Edsger W.}, title = {Go To Statement Considered
  Harmful}, journal = cacm, year = {1968}}
@article{broken, title = {never closed
"""


def leaflab(
    url: str, key: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LEAFLAB_")}
    return subprocess.run(  # noqa: S603 - our own interpreter and CLI
        [sys.executable, "-c", ENTRY_POINT, "library", *args],
        cwd=ROOT,
        env={**clean, **(env or {}), "LEAFLAB_URL": url, "LEAFLAB_API_KEY": key, "COLUMNS": "120"},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_import_and_export_from_the_command_line(
    stack: Stack,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    session_factory: sessionmaker[Session],
    isolated_redis_url: str,
) -> None:
    bib = tmp_path / "refs.bib"
    bib.write_text(BIB)
    with api_with_library(stack, tmp_path_factory.mktemp("cli-import"), isolated_redis_url) as url:
        user = make_user(session_factory)
        project = make_project(session_factory, user)
        done = leaflab(url, user.key, "import", str(bib), "--project", project)
        assert done.returncode == 0, done.stderr
        assert "3/3 entries" in done.stderr
        first = done.stdout.splitlines()
        assert first[0].endswith(
            "(bibtex, 3 entries) done: 0 matched, 0 fetched, 2 metadata-only, 1 skipped"
        )
        assert first[1].startswith("  skipped broken: malformed entry at line")

        again = leaflab(url, user.key, "import", str(bib), "--project", project, "--json")
        assert again.returncode == 0, again.stderr
        summary = json.loads(again.stdout)["summary"]
        assert summary["matched"] == 2 and summary["metadata_only"] == 0

        exported = leaflab(url, user.key, "export", "--project", project)
        assert exported.returncode == 0, exported.stderr
        assert "@article{hoare1969axiomatic," in exported.stdout
        assert "journal = {Communications of the ACM}" in exported.stdout
        titles = {e.title for e in read_bibliography(exported.stdout.encode()).entries}
        assert titles == {
            "An Axiomatic Basis for Computer Programming",
            "Go To Statement Considered Harmful",
        }
        # Their own library holds none of the project's papers.
        assert leaflab(url, user.key, "export").stdout == ""

        notes = tmp_path / "notes.txt"
        notes.write_text("not a bibliography\n")
        refused = leaflab(url, user.key, "import", str(notes))
        assert refused.returncode == 1
        assert "HTTP 422 not_a_bibliography" in refused.stderr
