"""chunk → embed → store: the one path used by ingestion and by `library eval`."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from services.library.chunking import Chunk
from services.library.embedding import Embedder
from services.library.lexical import Bm25Encoder
from services.library.store.base import StoredChunk, VectorStore

CHUNK_NAMESPACE = uuid.UUID("6f1d0c52-55c4-4a8e-9f6e-2a2f3f0b7c11")


def embed_text(chunk: Chunk, title: str) -> str:
    """What the dense model reads: paper title and section give a chunk its context."""
    head = " — ".join(p for p in (title, chunk.section.split(" > ")[-1]) if p)
    return f"{head}. {chunk.text}" if head else chunk.text


def index_chunks(
    chunks: list[Chunk],
    *,
    document_id: str,
    collection: str,
    title: str,
    filename: str | None,
    embedder: Embedder,
    encoder: Bm25Encoder,
    store: VectorStore,
    batch: int = 64,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Embed and store ``chunks`` in batches; returns how many were stored."""
    done = 0
    for start in range(0, len(chunks), batch):
        part = chunks[start : start + batch]
        vectors = embedder.encode([embed_text(c, title) for c in part])
        points = []
        for chunk, vector in zip(part, vectors, strict=True):
            payload = {
                "collection": collection,
                "document_id": document_id,
                "title": title,
                "filename": filename,
                "locator": chunk.locator,
                "page": chunk.page,
                "section": chunk.section,
                "kind": chunk.kind,
                "env": chunk.env,
                "ordinal": chunk.ordinal,
                "text": chunk.text,
            }
            points.append(
                StoredChunk(
                    id=str(uuid.uuid5(CHUNK_NAMESPACE, f"{document_id}:{chunk.ordinal}")),
                    dense=vector.tolist(),
                    sparse=encoder.encode_document(chunk.text, title=title),
                    payload=payload,
                )
            )
        store.upsert(points)
        done += len(points)
        if progress is not None:
            progress(done)
    return done
