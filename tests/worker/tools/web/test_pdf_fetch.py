"""pdf_fetch: text with pages from a real paper, and adding it to the project library."""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path

import pytest
import redis
from celery import Celery
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts.tasks import LIBRARY_QUEUE
from services.common.documents.blobs import BlobStore
from services.common.models import Document
from services.worker.tools.base import ToolContext, ToolError
from services.worker.tools.library_intake import CeleryIngestQueue
from services.worker.tools.web.pdf import PdfFetchArgs, PdfFetchTool
from services.worker.tools.web.settings import ResearchToolSettings
from tests.fixtures.builders import make_project, make_user
from tests.fixtures.recorded_web import PDF_PATH, RecordedWeb
from tests.worker.tools.web.conftest import settings_for


def test_text_comes_with_page_markers(
    research: ResearchToolSettings, recorded_web: RecordedWeb, ctx: ToolContext
) -> None:
    tool = PdfFetchTool(research, ingest=None)
    result = tool.run(PdfFetchArgs(url=f"{recorded_web.base}/paper.pdf"), ctx)
    assert result.data["pages"] == 4
    assert "Beyond Summarization" in result.data["title"]
    assert result.content.index("[page 1]") < result.content.index("[page 4]")
    assert "Expository Writing" in result.content
    assert "document_id" not in result.data


def test_a_pdf_larger_than_the_cap_is_refused(
    recorded_web: RecordedWeb, tmp_path: Path, ctx: ToolContext
) -> None:
    tool = PdfFetchTool(
        settings_for(recorded_web, tmp_path, pdf_fetch_max_bytes=10_000), ingest=None
    )
    with pytest.raises(ToolError) as caught:
        tool.run(PdfFetchArgs(url=f"{recorded_web.base}/paper.pdf"), ctx)
    assert caught.value.code == "too_large"


@pytest.mark.parametrize("path", ["/fake.pdf", "/article.html"])
def test_what_is_not_a_pdf_is_refused(
    research: ResearchToolSettings, recorded_web: RecordedWeb, ctx: ToolContext, path: str
) -> None:
    with pytest.raises(ToolError) as caught:
        PdfFetchTool(research, ingest=None).run(PdfFetchArgs(url=f"{recorded_web.base}{path}"), ctx)
    assert caught.value.code == "not_pdf"


def test_add_to_library_registers_the_paper_in_the_project_once(
    research: ResearchToolSettings,
    recorded_web: RecordedWeb,
    ctx: ToolContext,
    session_factory: sessionmaker[Session],
    isolated_redis_url: str,
) -> None:
    user = make_user(session_factory)
    project_name = make_project(session_factory, user)
    with session_factory() as db:
        from services.common.models import Project

        project_id = db.scalars(select(Project.id).where(Project.name == project_name)).one()
    ctx.user_id, ctx.project_id, ctx.db = str(user.id), str(project_id), session_factory
    queue = redis.Redis.from_url(isolated_redis_url)
    queue.delete(LIBRARY_QUEUE)
    tool = PdfFetchTool(research, ingest=CeleryIngestQueue(Celery("t", broker=isolated_redis_url)))
    args = PdfFetchArgs(url=f"{recorded_web.base}/paper.pdf", add_to_library=True)

    first = tool.run(args, ctx)
    again = tool.run(args, ctx)  # a retried or resumed call

    doc_id = first.data["document_id"]
    assert "Library: added to the library as document" in first.content
    assert again.data["document_id"] == doc_id and again.data["duplicate"] is True
    with session_factory() as db:
        docs = db.scalars(select(Document).where(Document.owner_id == user.id)).all()
    assert [str(d.id) for d in docs] == [doc_id]
    doc = docs[0]
    assert doc.collection == f"project:{project_id}" and doc.status == "queued"
    assert doc.filename == "paper.pdf" and doc.source_url == f"{recorded_web.base}/paper.pdf"
    digest = hashlib.sha256(PDF_PATH.read_bytes()).hexdigest()
    assert doc.content_hash == digest
    assert BlobStore(research.resolved_files_dir).path(digest).read_bytes()[:5] == b"%PDF-"
    assert queue.llen(LIBRARY_QUEUE) == 1  # one ingest request, not one per call


def test_without_a_project_the_paper_goes_to_the_users_own_library(
    research: ResearchToolSettings,
    recorded_web: RecordedWeb,
    ctx: ToolContext,
    session_factory: sessionmaker[Session],
) -> None:
    user = make_user(session_factory)
    ctx.user_id, ctx.project_id, ctx.db = str(user.id), None, session_factory
    result = PdfFetchTool(research, ingest=None).run(
        PdfFetchArgs(url=f"{recorded_web.base}/paper.pdf", add_to_library=True), ctx
    )
    with session_factory() as db:
        doc = db.get(Document, uuid.UUID(result.data["document_id"]))
    assert doc is not None and doc.collection == f"user:{user.id}"
