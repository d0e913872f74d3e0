"""Bibliography import throughput (issue 28 item 2): entries per second for
metadata-only entries, and end to end for entries whose PDFs are fetched from a
loopback server and ingested — through the library's own code (the
``library.import`` task body and ``library.ingest``), in this process, on a
scratch database.

Baseline in the same run: reading the file alone (``read_bibliography``), the
part no database or network can speed up.

    .venv/bin/python -m bench.import_throughput --entries 2000 --pdf-entries 4
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import shutil
import tempfile
import threading
import time
import uuid
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from bench.scratch_stack import scratch_stack
from services.common.bibliography import Entry, read_bibliography
from services.common.db import transaction
from services.common.models import Document, LibraryImport, LibraryImportEntry, User
from services.library.imports.run import run_import
from services.library.ingest import ingest_document
from services.library.runtime import build_runtime
from services.library.settings import LibrarySettings


def _shared_pdfs() -> Path:
    """shared/data/pdfs beside the checkout or a folder above it (worktrees)."""
    for folder in Path(__file__).resolve().parents:
        if (folder / "shared" / "data" / "pdfs").is_dir():
            return folder / "shared" / "data" / "pdfs"
    return Path("shared/data/pdfs")


# Small shared PDFs (1-15 pages), each served under fake arXiv ids.
PDFS = ("1903.10676.pdf", "test-uu.pdf", "2304.02623v1.pdf", "2302.07302v1.pdf")


def synthetic_bib(n: int, *, arxiv_from: int = 0, arxiv: bool = False) -> str:
    """``n`` entries as a lab writes them: accents, @string venues, DOIs on half."""
    out = ["@string{jml = {Journal of Machine Learning Research}}"]
    for i in range(n):
        ident = (
            f"eprint = {{2401.{arxiv_from + i:05d}}}, archivePrefix = {{arXiv}}"
            if arxiv
            else (f"doi = {{10.5555/bench.{i}}}" if i % 2 else "note = {no identifier}")
        )
        out.append(
            f"@article{{k{i},\n"
            f"  author = {{M{{\\\"u}}ller, J{{\\'e}}r{{\\^o}}me and Smith, Ann}},\n"
            f"  title = {{{'A Preprint on' if arxiv else 'A Study of'} Problem {i}: "
            f"{{Sparse}} Methods for Case {i * 7}}},\n"
            f"  journal = jml, year = {2000 + i % 25}, month = jan,\n  {ident}\n}}"
        )
    return "\n\n".join(out) + "\n"


def _queue(factory: sessionmaker[Session], user_id: uuid.UUID, entries: list[Entry]) -> uuid.UUID:
    with transaction(factory) as db:
        job = LibraryImport(
            owner_id=user_id,
            collection=f"user:{user_id}",
            format="bibtex",
            total=len(entries),
        )
        db.add(job)
        db.flush()
        for n, entry in enumerate(entries):
            db.add(
                LibraryImportEntry(
                    import_id=job.id,
                    ordinal=n,
                    key=entry.key,
                    title=entry.title,
                    state="pending",
                    entry=entry.as_dict(),
                )
            )
        return job.id


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=2000, help="metadata-only entries")
    ap.add_argument("--pdf-entries", type=int, default=4, help="entries with a PDF to fetch")
    ap.add_argument("--pdfs", type=Path, default=_shared_pdfs(), help="folder of the shared PDFs")
    args = ap.parse_args()
    text = synthetic_bib(args.entries)
    t0 = time.perf_counter()
    parsed = read_bibliography(text.encode())
    parse_s = time.perf_counter() - t0
    assert len(parsed.entries) == args.entries

    with tempfile.TemporaryDirectory(prefix="leaflab-bench-import-") as tmp:
        served = Path(tmp) / "served" / "arxiv"
        served.mkdir(parents=True)
        for i in range(args.pdf_entries):
            shutil.copyfile(args.pdfs / PDFS[i % len(PDFS)], served / f"2401.{i:05d}")
        handler = functools.partial(
            http.server.SimpleHTTPRequestHandler, directory=str(served.parent)
        )
        handler.log_message = lambda *a, **k: None  # type: ignore[attr-defined,method-assign]
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        port = server.server_address[1]
        with scratch_stack("import") as stack:
            settings = LibrarySettings(
                database_url=stack.database_url,
                redis_url=stack.redis_url,
                home=Path(tmp) / "home",
                web_allow=f"127.0.0.1:{port}",
                arxiv_pdf_base=f"http://127.0.0.1:{port}/arxiv",
                qdrant_url=None,
            )
            runtime = build_runtime(settings)
            with transaction(runtime.session_factory) as db:
                user = User(email=f"bench-{uuid.uuid4().hex[:8]}@lab.test")
                db.add(user)
                db.flush()
                user_id = user.id
            meta_id = _queue(runtime.session_factory, user_id, parsed.entries)
            t0 = time.perf_counter()
            assert run_import(runtime, str(meta_id)) == "done"
            meta_s = time.perf_counter() - t0
            again_id = _queue(runtime.session_factory, user_id, parsed.entries)
            t0 = time.perf_counter()
            run_import(runtime, str(again_id))  # every entry matched: the re-import path
            again_s = time.perf_counter() - t0

            pdf_entries = read_bibliography(
                synthetic_bib(args.pdf_entries, arxiv=True).encode()
            ).entries
            pdf_id = _queue(runtime.session_factory, user_id, pdf_entries)
            t0 = time.perf_counter()
            run_import(runtime, str(pdf_id))
            fetch_s = time.perf_counter() - t0
            with runtime.session_factory() as db:
                fetched = db.scalars(
                    select(LibraryImportEntry.document_id).where(
                        LibraryImportEntry.import_id == pdf_id,
                        LibraryImportEntry.state == "fetched",
                    )
                ).all()
            outcomes = [ingest_document(runtime, str(doc)) for doc in fetched]
            e2e_s = time.perf_counter() - t0
            with runtime.session_factory() as db:
                docs = db.scalar(
                    select(func.count()).select_from(Document).where(Document.owner_id == user_id)
                )
            runtime.close()
        server.shutdown()
    print(
        json.dumps(
            {
                "benchmark": "import_throughput",
                "baseline_parse_only_entries_per_s": round(args.entries / parse_s, 1),
                "metadata_only_entries_per_s": round(args.entries / meta_s, 1),
                "reimport_all_matched_entries_per_s": round(args.entries / again_s, 1),
                "pdf_entries": args.pdf_entries,
                "pdf_fetch_entries_per_s": round(args.pdf_entries / fetch_s, 2),
                "pdf_end_to_end_entries_per_s": round(args.pdf_entries / e2e_s, 2),
                "ingested": outcomes.count("ready"),
                "documents": docs,
            }
        )
    )


if __name__ == "__main__":
    main()
