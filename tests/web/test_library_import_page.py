"""The Library page's "Import bibliography" in Chromium: a .bib file chosen, the
import's progress and summary shown (matched, fetched, metadata-only, skipped
with each reason), the new documents listed without a reload, a second import
all matched, a file that is no bibliography refused with the server's reason, and
the file's text never becoming markup."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import BrowserContext, expect
from sqlalchemy.orm import Session, sessionmaker

from tests.api.live_library import api_with_library
from tests.conftest import Stack
from tests.fixtures.builders import make_user
from tests.fixtures.zotero_server import LIBRARY_ID, ZOTERO_KEY, ZoteroServer, zotero_server  # noqa: F401
from tests.web.browser import login

BIB = r"""@article{godel1931,
  author = {G{\"o}del, Kurt},
  title = {{\"U}ber formal unentscheidbare S{\"a}tze der {P}rincipia {M}athematica},
  journal = {Monatshefte f{\"u}r Mathematik und Physik}, year = 1931}
@misc{xss, year = 2020,
  title = {<img src=x onerror=window.__xss=1> Tricky Titles In Bibliographies}}
@article{broken, title = {never closed
"""


@pytest.fixture(scope="module")
def library_url(
    stack: Stack, tmp_path_factory: pytest.TempPathFactory, isolated_redis_url: str
) -> Iterator[str]:
    with api_with_library(stack, tmp_path_factory.mktemp("web_import"), isolated_redis_url) as url:
        yield url


def test_import_shows_progress_summary_and_the_new_documents(
    library_url: str, context: BrowserContext, session_factory: sessionmaker[Session]
) -> None:
    user = make_user(session_factory)
    page = login(context, library_url, user.key, next_path="/library")
    expect(page.locator("body[data-library-ready='1']")).to_have_count(1)
    bib = {"name": "refs.bib", "mimeType": "application/x-bibtex", "buffer": BIB.encode()}
    page.set_input_files("[data-testid=import-file-input]", [bib])
    item = page.get_by_test_id("import-item").first
    expect(item.get_by_test_id("import-progress")).to_have_text("done", timeout=60_000)
    expect(item.get_by_test_id("import-summary")).to_have_text(
        "0 matched, 0 fetched, 2 metadata-only, 1 skipped"
    )
    expect(item.get_by_test_id("import-skipped")).to_contain_text("broken: malformed entry at line")
    expect(item).to_contain_text("(bibtex, 3 entries, personal)")
    rows = page.locator("#documents tr")
    expect(rows).to_have_count(2)  # listed without a reload
    expect(page.get_by_test_id("documents")).to_contain_text(
        "Über formal unentscheidbare Sätze der Principia Mathematica"
    )
    expect(page.get_by_test_id("documents")).to_contain_text("<img src=x onerror")
    expect(rows.locator("xpath=self::*[@data-status='metadata_only']")).to_have_count(2)

    page.set_input_files("[data-testid=import-file-input]", [bib])
    again = page.get_by_test_id("import-item").first
    expect(again.get_by_test_id("import-summary")).to_have_text(
        "2 matched, 0 fetched, 0 metadata-only, 1 skipped", timeout=60_000
    )
    expect(rows).to_have_count(2)

    notes = {"name": "notes.txt", "mimeType": "text/plain", "buffer": b"just my notes\n"}
    page.set_input_files("[data-testid=import-file-input]", [notes])
    expect(page.get_by_test_id("import-refused")).to_contain_text(
        "notes.txt: refused: no BibTeX entry"
    )
    assert page.evaluate("window.__xss") is None


def test_a_zotero_library_imported_from_the_page(
    stack: Stack,
    tmp_path_factory: pytest.TempPathFactory,
    isolated_redis_url: str,
    zotero_server: ZoteroServer,  # noqa: F811 - the fixture
    context: BrowserContext,
    session_factory: sessionmaker[Session],
) -> None:
    """The Zotero form: id and key in, the import's summary out, the key field emptied;
    a wrong key shows Zotero's refusal on the import."""
    env = {"LEAFLAB_ZOTERO_URL": zotero_server.base, "LEAFLAB_WEB_ALLOW": zotero_server.allow_entry}
    base = tmp_path_factory.mktemp("web_zotero")
    with api_with_library(stack, base, isolated_redis_url, env) as url:
        user = make_user(session_factory)
        page = login(context, url, user.key, next_path="/library")
        expect(page.locator("body[data-library-ready='1']")).to_have_count(1)
        page.get_by_test_id("zotero-id").fill(str(LIBRARY_ID))
        page.get_by_test_id("zotero-key").fill(ZOTERO_KEY)
        page.get_by_test_id("zotero-import").click()
        expect(page.get_by_test_id("zotero-key")).to_have_value("")
        item = page.get_by_test_id("import-item").first
        expect(item.get_by_test_id("import-progress")).to_have_text("done", timeout=60_000)
        expect(item.get_by_test_id("import-summary")).to_have_text(
            "0 matched, 0 fetched, 5 metadata-only, 0 skipped"
        )
        expect(item).to_contain_text(f"zotero user {LIBRARY_ID} (zotero, 5 entries, personal)")
        expect(page.locator("#documents tr")).to_have_count(5)

        page.get_by_test_id("zotero-kind").select_option("group")
        page.get_by_test_id("zotero-key").fill("WrongKey0000")
        page.get_by_test_id("zotero-import").click()
        failed = page.get_by_test_id("import-item").first
        expect(failed).to_contain_text(f"zotero group {LIBRARY_ID}")
        expect(failed.locator(".error")).to_contain_text(
            "Zotero refused the API key (403 Forbidden)"
        )
