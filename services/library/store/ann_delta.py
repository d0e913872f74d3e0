"""The dense index's delta file: graph changes since the last full save, appended.

Why: a periodic save used to rewrite every graph (1.6 GB per million chunks)
even when a few hundred points had changed. A save now appends one record per
point added to or removed from a graph since the previous save; the full
graphs are rewritten only at close, after a restart replayed a delta, or when
the delta holds more records than a fraction of the saved vectors
(``ann_saved.py`` decides).

Layout: a header (magic, then the token of the full save it follows, so a
delta is never replayed onto other graphs) and records, each framed as
``<u32 length><u32 crc32>`` + body. A crash mid-append leaves a short or
mismatching *last* record: the records before it are good, the tail is
dropped and the caller checks the graphs against the store (no clean
marker can follow a torn append). A mismatching record with records after
it is damage, not a torn append: the whole save is refused (rebuilt).
"""

from __future__ import annotations

import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DELTA = "delta.log"
MAGIC = b"LLANNDELTA1\n"
TOKEN_BYTES = 16
FRAME = struct.Struct("<II")  # body length, crc32 of the body
ADD, REMOVE = 1, 2


class DeltaError(Exception):
    """The delta file is damaged or belongs to another full save."""


@dataclass(frozen=True)
class Change:
    collection: str
    point_id: str
    vector: np.ndarray | None  # the int8 vector the graph holds; None: removed


def create(folder: Path, token: bytes) -> None:
    """An empty delta for the full save ``token`` (written into its staging folder)."""
    _append_bytes(folder / DELTA, MAGIC + token, mode="wb")


def append(folder: Path, changes: list[Change]) -> int:
    """Append ``changes`` durably; returns the bytes written."""
    data = b"".join(_frame(_encode(c)) for c in changes)
    if data:
        _append_bytes(folder / DELTA, data, mode="ab")
    return len(data)


def read(folder: Path, token: bytes, dimension: int) -> tuple[list[Change], bool]:
    """The changes after the full save ``token``, and whether a torn tail was dropped."""
    try:
        data = (folder / DELTA).read_bytes()
    except FileNotFoundError:
        raise DeltaError("no delta file") from None
    head = len(MAGIC) + TOKEN_BYTES
    if data[: len(MAGIC)] != MAGIC or data[len(MAGIC) : head] != token:
        raise DeltaError("delta file of another save")
    changes: list[Change] = []
    at = head
    while at < len(data):
        if len(data) - at < FRAME.size:
            return changes, True
        length, crc = FRAME.unpack_from(data, at)
        end = at + FRAME.size + length
        if end > len(data):
            return changes, True
        body = data[at + FRAME.size : end]
        if _crc(body) != crc:
            if end == len(data):
                return changes, True
            raise DeltaError(f"delta record at byte {at} does not match its checksum")
        try:
            changes.append(_decode(body, dimension))
        except (ValueError, UnicodeDecodeError, struct.error) as exc:
            raise DeltaError(f"delta record at byte {at}: {exc}") from None
        at = end
    return changes, False


def _encode(change: Change) -> bytes:
    collection, point_id = change.collection.encode(), change.point_id.encode()
    op = REMOVE if change.vector is None else ADD
    head = struct.pack("<BHB", op, len(collection), len(point_id))
    vector = b"" if change.vector is None else change.vector.astype(np.int8).tobytes()
    return head + collection + point_id + vector


def _decode(body: bytes, dimension: int) -> Change:
    op, clen, plen = struct.unpack_from("<BHB", body)
    at = struct.calcsize("<BHB")
    collection = body[at : at + clen].decode()
    point_id = body[at + clen : at + clen + plen].decode()
    rest = body[at + clen + plen :]
    if op == REMOVE and not rest:
        return Change(collection, point_id, None)
    if op == ADD and len(rest) == dimension:
        return Change(collection, point_id, np.frombuffer(rest, dtype=np.int8).copy())
    raise ValueError(f"operation {op} with {len(rest)} vector bytes")


def _frame(body: bytes) -> bytes:
    return FRAME.pack(len(body), _crc(body)) + body


def _crc(body: bytes) -> int:
    return zlib.crc32(body)


def _append_bytes(path: Path, data: bytes, *, mode: str) -> None:
    with open(path, mode) as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
