"""The dense index on disk: one int8 graph per collection (``ann_graph.py``), its
label → point id table, a manifest with the number of vectors and a CRC-32 of
every file, and the delta of changes appended since (``ann_delta.py``).

Why a checksum: the graph library only checks a file's structure when it loads
one, and a graph whose bytes were damaged would answer with wrong neighbours.
A file that does not match its manifest is never loaded: the index is rebuilt
from the store instead. The delta's records carry their own checksums.

Why a ``clean`` marker: the saved graphs match the store only while nothing has
been written since the save. The marker is written after a save that no write
overlapped, and removed *before* the next write reaches the store, so a crash
at any point leaves either a marker that tells the truth or no marker (then
the loaded graphs are checked against the store before they answer alone).

A save writes a fresh folder and swaps it in with two renames: a crash mid-save
leaves the previous save or none, never half of one.
"""

from __future__ import annotations

import json
import os
import shutil
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from services.library.store import ann_delta
from services.library.store.ann_graph import QuantisedGraph

FORMAT = 2  # 1 was hnswlib float32 graphs: such a save is rebuilt once
MANIFEST = "manifest.json"
CLEAN = "clean"
ID_WIDTH = 36  # a UUID's text form; a deleted label's id is empty


class IndexFileError(Exception):
    """The saved index is missing, damaged or made for another setup (the reason)."""


@dataclass
class SavedGraph:
    collection: str
    index: QuantisedGraph
    ids: list[str]  # label -> point id, "" where the label was deleted


@dataclass(frozen=True)
class LoadedIndex:
    graphs: list[SavedGraph]
    clean: bool  # nothing was written to the store after the save
    vectors: int  # live vectors in all graphs (before the delta)
    token: bytes  # the full save's token: the delta appended to it names it
    delta: list[ann_delta.Change]  # graph changes since, to replay in order
    torn: bool  # a torn last delta record was dropped (a crash mid-append)


def save(folder: Path, dimension: int, m: int, graphs: list[SavedGraph]) -> bytes:
    """Write ``graphs`` to a new folder with an empty delta and swap it in (not
    yet marked clean); returns the save's token."""
    staging = folder.with_name(folder.name + ".new")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    token = os.urandom(ann_delta.TOKEN_BYTES)
    ann_delta.create(staging, token)
    entries = {}
    for n, graph in enumerate(graphs):
        graph_file, ids_file = f"g{n}.hnsw", f"g{n}.ids.npy"
        graph.index.save(staging / graph_file)
        np.save(staging / ids_file, np.asarray(graph.ids, dtype=f"S{ID_WIDTH}"), allow_pickle=False)
        entries[graph.collection] = {
            "graph": graph_file,
            "ids": ids_file,
            "elements": len(graph.ids),
            "vectors": sum(1 for i in graph.ids if i),
            "crc": {f: _crc(staging / f) for f in (graph_file, ids_file)},
        }
    manifest = {
        "format": FORMAT,
        "dimension": dimension,
        "m": m,
        "token": token.hex(),
        "collections": entries,
    }
    _write_synced(staging / MANIFEST, json.dumps(manifest, indent=1).encode())
    old = folder.with_name(folder.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if folder.exists():
        folder.rename(old)
    staging.rename(folder)
    shutil.rmtree(old, ignore_errors=True)
    return token


def mark_clean(folder: Path) -> None:
    _write_synced(folder / CLEAN, b"the graphs match the store\n")


def mark_dirty(folder: Path) -> None:
    """Called before a write reaches the store."""
    (folder / CLEAN).unlink(missing_ok=True)
    _sync_dir(folder)


def load(folder: Path, dimension: int, m: int, ef_construction: int) -> LoadedIndex:
    """The saved graphs and their delta, every file checked first."""
    try:
        manifest = json.loads((folder / MANIFEST).read_bytes())
    except FileNotFoundError:
        raise IndexFileError("no saved index") from None
    except (OSError, ValueError) as exc:
        raise IndexFileError(f"unreadable manifest: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise IndexFileError("manifest of another format")
    if manifest.get("dimension") != dimension or manifest.get("m") != m:
        raise IndexFileError("saved for another model dimension or graph degree")
    clean = (folder / CLEAN).exists()
    try:
        token = bytes.fromhex(manifest["token"])
        delta, torn = ann_delta.read(folder, token, dimension)
    except (KeyError, ValueError, TypeError, ann_delta.DeltaError) as exc:
        raise IndexFileError(f"delta: {exc}") from None
    graphs = [
        _load_graph(folder, c, e, dimension, m, ef_construction)
        for c, e in manifest["collections"].items()
    ]
    vectors = sum(sum(1 for i in g.ids if i) for g in graphs)
    # A torn append means a crash mid-save: whatever the marker says, check.
    return LoadedIndex(graphs, clean and not torn, vectors, token, delta, torn)


def _load_graph(
    folder: Path, collection: str, entry: dict, dimension: int, m: int, ef_construction: int
) -> SavedGraph:
    try:
        for name, crc in entry["crc"].items():
            if _crc(folder / name) != crc:
                raise IndexFileError(f"{name} does not match its checksum")
        ids = [i.decode() for i in np.load(folder / entry["ids"], allow_pickle=False).tolist()]
        index = QuantisedGraph.load(folder / entry["graph"], dimension, m, ef_construction)
    except IndexFileError:
        raise
    except (OSError, KeyError, ValueError, TypeError, RuntimeError) as exc:
        raise IndexFileError(f"graph of {collection}: {exc}") from None
    # A label removed while the save ran is in ``ids`` but not in the graph.
    if len(ids) != entry["elements"] or len(index) > len(ids):
        raise IndexFileError(f"graph of {collection} holds another number of vectors")
    return SavedGraph(collection, index, ids)


def _crc(path: Path) -> int:
    crc = 0
    with open(path, "rb") as f:
        while block := f.read(1 << 22):
            crc = zlib.crc32(block, crc)
    return crc


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    _sync_dir(path.parent)


def _sync_dir(folder: Path) -> None:
    if not folder.exists():
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
