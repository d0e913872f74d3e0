"""`leaflab library import --zotero-user/--zotero-group` as a real process against a
real API process and library service, Zotero replaced by the recorded loopback
server: the summary printed, the key taken from LEAFLAB_ZOTERO_KEY, a wrong key
exit 1 with Zotero's refusal, and the key in none of the processes' logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker

from tests.conftest import Stack
from tests.fixtures.builders import make_project, make_user
from tests.fixtures.library_services import library_services
from tests.fixtures.zotero_server import (  # noqa: F401 - a fixture
    LIBRARY_ID,
    ZOTERO_KEY,
    ZoteroServer,
    zotero_server,
)
from tests.library.test_import_cli import leaflab


def test_a_zotero_library_imported_from_the_command_line(
    stack: Stack,
    tmp_path_factory: pytest.TempPathFactory,
    session_factory: sessionmaker[Session],
    isolated_redis_url: str,
    zotero_server: ZoteroServer,  # noqa: F811 - the fixture
) -> None:
    base = tmp_path_factory.mktemp("cli-zotero")
    with library_services(stack, base, isolated_redis_url) as (svc, _library):
        svc.env.update(
            {
                "LEAFLAB_ZOTERO_URL": zotero_server.base,
                "LEAFLAB_WEB_ALLOW": zotero_server.allow_entry,
            }
        )
        url = svc.api()
        user = make_user(session_factory)
        project = make_project(session_factory, user)
        zid = str(LIBRARY_ID)
        done = leaflab(
            url,
            user.key,
            "import",
            "--zotero-user",
            zid,
            "--zotero-key",
            ZOTERO_KEY,
            "--project",
            project,
        )
        assert done.returncode == 0, done.stderr
        assert "5/5 entries" in done.stderr
        assert done.stdout.splitlines()[0].endswith(
            "(zotero, 5 entries) done: 0 matched, 0 fetched, 5 metadata-only, 0 skipped"
        )

        again = leaflab(
            url,
            user.key,
            "import",
            "--zotero-group",
            zid,
            "--project",
            project,
            "--json",
            env={"LEAFLAB_ZOTERO_KEY": ZOTERO_KEY},
        )
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout)["summary"]["matched"] == 5

        wrong = leaflab(url, user.key, "import", "--zotero-user", zid, "--zotero-key", "Nope0000")
        assert wrong.returncode == 1
        assert "error: Zotero refused the API key (403 Forbidden)" in wrong.stderr

        both = leaflab(url, user.key, "import", "--zotero-user", zid, "--zotero-group", zid)
        assert both.returncode == 2 and "one of them" in both.stderr
        keyless = leaflab(url, user.key, "import", "--zotero-user", zid)
        assert keyless.returncode == 2 and "LEAFLAB_ZOTERO_KEY" in keyless.stderr
    logs = "\n".join(p.read_text(errors="replace") for p in Path(base).rglob("*.log"))
    assert logs and ZOTERO_KEY not in logs
