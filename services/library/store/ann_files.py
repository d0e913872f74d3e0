"""The dense index on disk: one hnswlib graph per collection, its label → point id
table, and a manifest with the number of vectors and a CRC-32 of every file.

Why a checksum: hnswlib only checks a file's size when it loads one, and a
graph whose bytes were damaged would answer with wrong neighbours. A file
that does not match its manifest is never loaded: the index is rebuilt from
the store instead.

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

import hnswlib
import numpy as np

FORMAT = 1
MANIFEST = "manifest.json"
CLEAN = "clean"
ID_WIDTH = 36  # a UUID's text form; a deleted label's id is empty


class IndexFileError(Exception):
    """The saved index is missing, damaged or made for another setup (the reason)."""


@dataclass
class SavedGraph:
    collection: str
    index: hnswlib.Index
    ids: list[str]  # label -> point id, "" where the label was deleted


@dataclass(frozen=True)
class LoadedIndex:
    graphs: list[SavedGraph]
    clean: bool  # nothing was written to the store after the save
    vectors: int  # live vectors in all graphs


def save(folder: Path, dimension: int, m: int, graphs: list[SavedGraph]) -> None:
    """Write ``graphs`` to a new folder and swap it in (not yet marked clean)."""
    staging = folder.with_name(folder.name + ".new")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    entries = {}
    for n, graph in enumerate(graphs):
        graph_file, ids_file = f"g{n}.hnsw", f"g{n}.ids.npy"
        graph.index.save_index(str(staging / graph_file))
        np.save(staging / ids_file, np.asarray(graph.ids, dtype=f"S{ID_WIDTH}"), allow_pickle=False)
        entries[graph.collection] = {
            "graph": graph_file,
            "ids": ids_file,
            "elements": len(graph.ids),
            "vectors": sum(1 for i in graph.ids if i),
            "crc": {f: _crc(staging / f) for f in (graph_file, ids_file)},
        }
    manifest = {"format": FORMAT, "dimension": dimension, "m": m, "collections": entries}
    _write_synced(staging / MANIFEST, json.dumps(manifest, indent=1).encode())
    old = folder.with_name(folder.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if folder.exists():
        folder.rename(old)
    staging.rename(folder)
    shutil.rmtree(old, ignore_errors=True)


def mark_clean(folder: Path) -> None:
    _write_synced(folder / CLEAN, b"the graphs match the store\n")


def mark_dirty(folder: Path) -> None:
    """Called before a write reaches the store."""
    (folder / CLEAN).unlink(missing_ok=True)
    _sync_dir(folder)


def load(folder: Path, dimension: int, m: int) -> LoadedIndex:
    """The saved graphs, every file checked against the manifest first."""
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
    graphs = [_load_graph(folder, c, e, dimension) for c, e in manifest["collections"].items()]
    vectors = sum(sum(1 for i in g.ids if i) for g in graphs)
    return LoadedIndex(graphs, clean, vectors)


def _load_graph(folder: Path, collection: str, entry: dict, dimension: int) -> SavedGraph:
    try:
        for name, crc in entry["crc"].items():
            if _crc(folder / name) != crc:
                raise IndexFileError(f"{name} does not match its checksum")
        ids = [i.decode() for i in np.load(folder / entry["ids"], allow_pickle=False).tolist()]
        index = hnswlib.Index(space="cosine", dim=dimension)
        index.load_index(str(folder / entry["graph"]), max_elements=max(1, entry["elements"]))
    except IndexFileError:
        raise
    except (OSError, KeyError, ValueError, TypeError, RuntimeError) as exc:
        raise IndexFileError(f"graph of {collection}: {exc}") from None
    if len(ids) != entry["elements"] or index.get_current_count() != len(ids):
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
