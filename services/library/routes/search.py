"""Search the caller's collections (hybrid, BM25-only, dense-only and task modes)."""

from __future__ import annotations

import time
import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Query
from opentelemetry import trace

from services.common.contracts.collections import Collection
from services.common.contracts.errors import ServiceError
from services.common.metrics import LIBRARY_SEARCH_DURATION
from services.common.telemetry.names import SPAN_LIBRARY_SEARCH, TRACER_LIBRARY
from services.library.access import CallerDep, RuntimeDep
from services.library.kinds import KINDS, public_kind
from services.library.retrieval import MODES
from services.library.schemas import SearchResults
from services.library.scope import scoped_retriever

router = APIRouter(tags=["search"])
# A search narrowed to documents names a handful (a survey's fetched papers).
MAX_DOCUMENTS = 50
tracer = trace.get_tracer(TRACER_LIBRARY)


@router.get("/search", response_model=SearchResults)
def search(
    who: CallerDep,
    runtime: RuntimeDep,
    q: str = "",
    mode: str = "mix",
    k: int = 10,
    collection: Annotated[list[Collection] | None, Query()] = None,
    kind: str | None = None,
    document: Annotated[list[str] | None, Query()] = None,
) -> dict[str, Any]:
    if not q.strip() or len(q) > 2000:
        raise ServiceError(400, "invalid_request", "q must be 1–2000 characters")
    if mode not in MODES:
        raise ServiceError(400, "invalid_request", f"mode must be one of {', '.join(MODES)}")
    if not 1 <= k <= 100:
        raise ServiceError(400, "invalid_request", "k must be between 1 and 100")
    if kind is not None and kind not in KINDS:
        raise ServiceError(400, "invalid_request", f"kind must be one of {', '.join(KINDS)}")
    documents = _document_ids(document)
    collections = who.narrowed(collection or [])
    started = time.perf_counter()
    # The query text stays out of the span: it may quote unpublished work.
    with tracer.start_as_current_span(SPAN_LIBRARY_SEARCH) as span:
        span.set_attributes(
            {
                "library.mode": mode,
                "library.k": k,
                "library.collections": len(collections),
                "library.kind": kind or "any",
                "library.documents": len(documents or []),
            }
        )
        retriever = scoped_retriever(runtime.retriever, kind, documents)
        hits = retriever.search(q, collections=collections, mode=mode, k=k) if collections else []
        span.set_attribute("library.hits", len(hits))
    LIBRARY_SEARCH_DURATION.labels(mode).observe(time.perf_counter() - started)
    return {
        "items": [
            {
                "document_id": h.payload.get("document_id"),
                "title": h.payload.get("title"),
                "filename": h.payload.get("filename"),
                "locator": h.payload.get("locator"),
                "page": h.payload.get("page"),
                "section": h.payload.get("section"),
                "kind": public_kind(h.payload.get("kind")),
                "block": h.payload.get("kind"),
                "text": h.payload.get("text"),
                "score": h.score,
            }
            for h in hits
        ]
    }


def _document_ids(given: list[str] | None) -> list[str] | None:
    """``document=`` ids, checked: the filter narrows what the caller may read, never widens."""
    if given is None:
        return None
    if len(given) > MAX_DOCUMENTS:
        raise ServiceError(400, "invalid_request", f"at most {MAX_DOCUMENTS} document ids")
    ids = []
    for raw in given:
        try:
            ids.append(str(uuid.UUID(raw)))
        except ValueError:
            raise ServiceError(400, "invalid_request", f"not a document id: {raw[:60]!r}") from None
    return ids
