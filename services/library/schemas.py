"""Response models of the library service (also the shapes the API re-exports)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from services.common.contracts.collections import Collection


class DocumentAccepted(BaseModel):
    id: str
    status: str
    duplicate: bool


class DocumentView(BaseModel):
    id: str
    title: str | None
    filename: str | None
    status: str
    error: str | None
    pages: int | None
    collection: Collection
    chunks: int | None
    source_url: str | None
    attempts: int
    created_at: str | None
    authors: list[str] = []
    year: int | None = None
    venue: str | None = None
    doi: str | None = None
    arxiv_id: str | None = None
    # field -> "pdf" | "layout" | "text" | "filename" | "openalex" | "crossref" | "manual"
    metadata_source: dict[str, str] = {}
    duplicate_of: str | None = None
    retracted: bool = False


class DocumentDetail(DocumentView):
    structure: dict[str, Any] | None


class DocumentList(BaseModel):
    items: list[DocumentView]


class SearchHit(BaseModel):
    document_id: str | None
    title: str | None
    filename: str | None
    locator: str | None
    page: int | None
    section: str | None
    kind: str = Field(description="text, table (a Markdown table after its caption) or caption")
    block: str | None = Field(
        None, description="the chunker's finer kind: text, environment, reference, caption, table"
    )
    text: str | None
    score: float


class SearchResults(BaseModel):
    items: list[SearchHit]


class DenseIndexStatus(BaseModel):
    origin: str = Field(
        description="new (empty store), loaded (saved index) or rebuilt (from the store)"
    )
    ready: bool = Field(
        description="false while the index is filled from or checked against the store"
    )
    vectors: int
    reason: str | None = Field(None, description="why a saved index was not used")


class Health(BaseModel):
    status: str
    chunks: int
    dense_index: DenseIndexStatus | None = None


class ReferenceView(BaseModel):
    ordinal: int
    text: str
    title: str | None
    authors: list[str]
    year: int | None
    doi: str | None
    cited_document_id: str | None
    cited_title: str | None


class ReferenceList(BaseModel):
    items: list[ReferenceView]
