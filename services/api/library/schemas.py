"""Response models of /v1/library (the public shapes of the library's documents and hits)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from services.common.contracts.collections import Collection


class LibraryDocumentAccepted(BaseModel):
    id: str
    status: str
    duplicate: bool


class LibraryDocument(BaseModel):
    id: str
    title: str | None = None
    filename: str | None = None
    status: str
    error: str | None = None
    pages: int | None = None
    collection: Collection
    # "personal", "lab" or "project <name>": filled in by the API for the caller.
    collection_name: str | None = None
    chunks: int | None = None
    source_url: str | None = None
    attempts: int = 0
    created_at: str | None = None
    authors: list[str] = []
    year: int | None = None
    venue: str | None = None
    doi: str | None = None
    arxiv_id: str | None = None
    # Where each field came from: "pdf", "layout", "text", "filename", "openalex", "crossref" or
    # "manual" (a PATCH; never overwritten by extraction).
    metadata_source: dict[str, str] = {}
    # The earlier document with the same DOI or arXiv id, when this one repeats it.
    duplicate_of: str | None = None
    # A metadata lookup (OpenAlex / Crossref) says the paper was retracted.
    retracted: bool = False


class LibraryDocumentDetail(LibraryDocument):
    structure: dict[str, Any] | None = None


class LibraryDocumentList(BaseModel):
    items: list[LibraryDocument]


class LibrarySearchHit(BaseModel):
    document_id: str | None = None
    title: str | None = None
    filename: str | None = None
    locator: str | None = None
    page: int | None = None
    section: str | None = None
    kind: str | None = None  # text | table | caption
    block: str | None = None  # the chunker's finer kind: text, environment, reference, …
    text: str | None = None
    score: float


class LibrarySearchResults(BaseModel):
    items: list[LibrarySearchHit]


class LibraryReference(BaseModel):
    """One entry of a paper's reference list; ``cited_document_id`` when the library holds it."""

    ordinal: int
    text: str
    title: str | None = None
    authors: list[str] = []
    year: int | None = None
    doi: str | None = None
    cited_document_id: str | None = None
    cited_title: str | None = None


class LibraryReferenceList(BaseModel):
    items: list[LibraryReference]


class LibraryImportEntry(BaseModel):
    """One entry of an imported file and what became of it: ``pending``, ``matched``
    (the library held it: ``document_id``), ``fetched`` (a new document, its PDF
    downloaded and being ingested), ``metadata_only`` (a new document without a
    PDF; ``reason`` says why) or ``skipped`` (unusable; ``reason``)."""

    ordinal: int
    key: str | None = None
    title: str | None = None
    state: str
    reason: str | None = None
    document_id: str | None = None


class LibraryImportSummary(BaseModel):
    matched: int = 0
    fetched: int = 0
    metadata_only: int = 0
    skipped: int = 0
    pending: int = 0


class LibraryImport(BaseModel):
    """An import job: ``status`` queued → running → done; ``done`` of ``total``
    entries settled so far; ``entries`` only when one import is asked for."""

    id: str
    status: str
    format: str
    filename: str | None = None
    collection: Collection
    collection_name: str | None = None
    total: int
    done: int
    error: str | None = None
    created_at: str | None = None
    finished_at: str | None = None
    summary: LibraryImportSummary
    entries: list[LibraryImportEntry] | None = None


class LibraryImportList(BaseModel):
    items: list[LibraryImport]
