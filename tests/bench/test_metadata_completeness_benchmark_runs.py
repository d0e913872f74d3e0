"""The metadata completeness benchmark runs on two shared PDFs and prints the three
shares (before extraction, after it, with the recorded lookup); figures:
bench/RESULTS.md."""

from __future__ import annotations

from pathlib import Path

from tests.bench.runner import last_json, run_bench
from tests.library.conftest import PDF_DIR


def test_metadata_completeness_prints_shares_with_and_without_lookup(tmp_path: Path) -> None:
    for name in ("2020.acl-main.447.pdf", "test-uu.pdf"):
        (tmp_path / name).write_bytes((PDF_DIR / name).read_bytes())
    figures = last_json(run_bench("bench.metadata_completeness", "--pdfs", str(tmp_path)))
    assert figures["documents"] == 2
    # S2ORC prints no DOI: only the exact-title lookup gives it one; test-uu has nothing to find.
    assert figures["after_pct"]["doi_or_arxiv"] == 0.0
    assert figures["with_lookup_pct"]["doi_or_arxiv"] == 50.0
    assert figures["found_by_lookup"] == 1 and figures["lookup_requests"]["openalex"] == 1
