"""A bibliography entry with only a DOI gets its PDF from the open-access copy the
metadata lookup knows (OpenAlex's ``oa_url``), through a real library service whose
OpenAlex is the loopback server of recorded records; a closed paper (no ``oa_url``)
stays metadata-only and says the lookup found no copy."""

from __future__ import annotations

import shutil
import uuid

import httpx
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from tests.fixtures.builders import make_user
from tests.fixtures.recorded_metadata import RecordedMetadata
from tests.library.conftest import PDF_DIR, LibraryService, PdfServer, wait_terminal
from tests.library.imports_helpers import by_title, documents, entry, post_import, wait_import
from tests.library.test_metadata_lookup import (  # noqa: F401 - fixtures
    CITESEE_DOI,
    client,
    lookup_library,
    lookup_proc,
    recorded,
)

OA_DOI = "10.5555/leaflab.oa-copy"
OA_TITLE = "An Open Access Paper Found Only Through Its Digital Object Identifier"


def _open_work(recorded: RecordedMetadata, oa_url: str) -> None:  # noqa: F811
    """A work OpenAlex files with an open-access copy (the shape of its /works answer)."""
    recorded.openalex.append(
        {
            "id": "https://openalex.org/W9990000001",
            "doi": f"https://doi.org/{OA_DOI}",
            "title": OA_TITLE,
            "display_name": OA_TITLE,
            "publication_year": 2024,
            "primary_location": {"source": {"display_name": "Journal of Open Copies"}},
            "open_access": {"is_oa": True, "oa_status": "gold", "oa_url": oa_url},
            "authorships": [{"author": {"display_name": "Ada Open"}}],
            "is_retracted": False,
        }
    )


def test_an_entry_with_only_a_doi_is_fetched_from_its_open_access_copy(
    client: TestClient,  # noqa: F811
    lookup_library: LibraryService,  # noqa: F811
    recorded: RecordedMetadata,  # noqa: F811
    pdf_server: PdfServer,
    session_factory: sessionmaker[Session],
) -> None:
    name = f"oa/{uuid.uuid4().hex[:8]}.pdf"
    (pdf_server.root / "oa").mkdir(exist_ok=True)
    shutil.copyfile(PDF_DIR / "2304.02623v1.pdf", pdf_server.root / name)
    _open_work(recorded, pdf_server.url(name))
    bib = (
        f"@article{{opencopy, title={{{OA_TITLE}}}, author={{Open, Ada}}, year={{2024}},"
        f" doi={{{OA_DOI}}}}}\n"
        f"@inproceedings{{citesee, title={{CiteSee}}, year={{2023}}, doi={{{CITESEE_DOI}}}}}\n"
    ).encode()
    user = make_user(session_factory)
    resp = post_import(client, user.key, bib, "refs.bib")
    assert resp.status_code == 202, resp.text
    done = wait_import(client, user.key, str(resp.json()["id"]))
    assert done["summary"]["fetched"] == 1 and done["summary"]["metadata_only"] == 1, done
    assert entry(done, "opencopy")["state"] == "fetched"
    closed = entry(done, "citesee")
    assert closed["state"] == "metadata_only"
    assert "none found by lookup" in closed["reason"]

    doc = by_title(documents(client, user.key), OA_TITLE[:30])
    assert doc["source_url"] == pdf_server.url(name)
    with httpx.Client(timeout=30) as raw:
        ready = wait_terminal(
            raw, lookup_library, lookup_library.headers(user.id), str(doc["id"]), timeout=120
        )
    assert ready["status"] == "ready", ready
    assert ready["pages"] and ready["pages"] > 0
