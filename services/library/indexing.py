"""chunk → embed → store: the one path used by ingestion and by `library eval`.

Embedding and storing overlap: a producer thread embeds batch n+1 while the
caller BM25-encodes and upserts batch n, through a bounded queue (at most
``QUEUE_DEPTH`` embedded batches wait, so memory stays flat on huge documents).
"""

from __future__ import annotations

import queue
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import numpy as np

from services.common.contracts.collections import Collection
from services.library.chunking import Chunk
from services.library.embedding import Embedder
from services.library.lexical import Bm25Encoder
from services.library.store.base import StoredChunk, VectorStore

CHUNK_NAMESPACE = uuid.UUID("6f1d0c52-55c4-4a8e-9f6e-2a2f3f0b7c11")
QUEUE_DEPTH = 2


@dataclass
class BatchProgress:
    """After each stored batch: chunks stored so far, of how many; how many of
    them the model computed (the rest came from the embedding cache)."""

    done: int
    total: int
    embedded: int


def embed_text(chunk: Chunk, title: str) -> str:
    """What the dense model reads: paper title and section give a chunk its context."""
    head = " — ".join(p for p in (title, chunk.section.split(" > ")[-1]) if p)
    return f"{head}. {chunk.text}" if head else chunk.text


def _points(
    part: list[Chunk],
    vectors: np.ndarray,
    *,
    document_id: str,
    collection: Collection,
    title: str,
    filename: str | None,
    encoder: Bm25Encoder,
) -> list[StoredChunk]:
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
    return points


_DONE = object()


def index_chunks(
    chunks: list[Chunk],
    *,
    document_id: str,
    collection: Collection,
    title: str,
    filename: str | None,
    embedder: Embedder,
    encoder: Bm25Encoder,
    store: VectorStore,
    batch: int = 64,
    progress: Callable[[BatchProgress], None] | None = None,
) -> BatchProgress:
    """Embed and store ``chunks`` in batches; returns the final tally.

    The whole document is put in the embedder's batch order (by token length
    when it buckets), so each batch pads little; every chunk keeps its own
    vector and id, so the stored result does not depend on that order.

    An error in either stage stops both and propagates; batches stored before
    it stay stored (point ids are stable, so a retry overwrites them).
    """
    order = embedder.batch_order([embed_text(c, title) for c in chunks])
    ordered = [chunks[i] for i in order]
    parts = [ordered[s : s + batch] for s in range(0, len(ordered), batch)]
    ready: queue.Queue[object] = queue.Queue(maxsize=QUEUE_DEPTH)
    stop = threading.Event()

    def offer(item: object) -> bool:
        """Wait for room unless the consumer has stopped (then drop: nobody reads)."""
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for part in parts:
                if stop.is_set():
                    return
                counted = embedder.encode_counted([embed_text(c, title) for c in part])
                if not offer((part, counted)):
                    return
        except BaseException as exc:  # handed to the consumer, raised there
            offer(exc)
            return
        offer(_DONE)

    producer = threading.Thread(target=produce, name=f"embed-{document_id[:8]}", daemon=True)
    producer.start()
    tally = BatchProgress(done=0, total=len(chunks), embedded=0)
    try:
        while True:
            got = ready.get()
            if got is _DONE:
                break
            if isinstance(got, BaseException):
                raise got
            part, (vectors, computed) = cast(tuple[list[Chunk], tuple[np.ndarray, int]], got)
            store.upsert(
                _points(
                    part,
                    vectors,
                    document_id=document_id,
                    collection=collection,
                    title=title,
                    filename=filename,
                    encoder=encoder,
                )
            )
            tally = BatchProgress(tally.done + len(part), tally.total, tally.embedded + computed)
            if progress is not None:
                progress(tally)
    finally:
        stop.set()
        producer.join(timeout=30)
    return tally
