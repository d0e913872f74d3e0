"""The eval CLI on a tiny SciFact subset, and the agent tool against the real service."""

from __future__ import annotations

import json
import secrets
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from services.cli.library_cmd import library as library_cli
from services.common.models.telemetry import SpanRecord
from services.worker.tools.base import ToolContext, ToolError
from services.worker.tools.library_search import library_tools
from services.worker.tools.ports import LibraryEndpoint
from tests.library import hostile_pdfs
from tests.library.conftest import PDF_DIR, TOKEN, LibraryService, make_user, wait_terminal

SCIFACT = PDF_DIR.parent / "scifact"


def test_eval_prints_one_json_line(tmp_path: Path) -> None:
    args = ["eval", str(SCIFACT), "--limit-docs", "40", "--limit-queries", "15"]
    cache = ["--embedding-cache", str(tmp_path / "vectors")]
    first = CliRunner().invoke(library_cli, [*args, *cache])
    assert first.exit_code == 0, first.output
    (line,) = first.stdout.strip().splitlines()  # exactly one JSON line on stdout
    metrics = json.loads(line)
    assert metrics["docs"] == 40 and metrics["queries"] == 15
    assert 0.5 < metrics["ndcg@10"] <= 1.0 and metrics["recall@100"] > 0.9
    for single in ("bm25", "dense"):  # the other retrievers, scored on the same index
        assert 0.3 < metrics[single]["ndcg@10"] <= 1.0
    # A rerun reads the cached vectors and must reach the very same figures.
    again = json.loads(CliRunner().invoke(library_cli, [*args, *cache]).stdout)
    assert {k: again[k] for k in ("ndcg@10", "recall@100", "bm25", "dense", "chunks")} == {
        k: metrics[k] for k in ("ndcg@10", "recall@100", "bm25", "dense", "chunks")
    }


def test_eval_rejects_bad_input(tmp_path: Path) -> None:
    result = CliRunner().invoke(library_cli, ["eval", str(tmp_path)])
    assert result.exit_code != 0 and "corpus.jsonl is missing" in result.output
    result = CliRunner().invoke(library_cli, ["eval", str(SCIFACT), "--limit-docs", "0"])
    assert result.exit_code != 0 and "--limit-docs must be at least 1" in result.output


def test_tool_finds_ingested_passages_in_the_jobs_trace(
    library: LibraryService, session_factory: sessionmaker[Session], unique: str, tmp_path: Path
) -> None:
    """The agent's tool, as a job runs it: real passages with locators, the
    library's spans in the job's trace, and the search counted in /metrics."""
    user = make_user(session_factory, unique)
    headers = library.headers(user)
    with httpx.Client(timeout=60) as client:
        pdf = hostile_pdfs.theorem_pdf(tmp_path / "flows.pdf")
        resp = client.post(
            f"{library.url}/documents",
            headers=headers,
            files={"file": ("flows.pdf", pdf.read_bytes(), "application/pdf")},
        )
        doc_id = resp.json()["id"]
        assert wait_terminal(client, library, headers, doc_id)["status"] == "ready"
    (tool,) = library_tools()
    ctx = ToolContext(
        job_id="j",
        session_id=None,
        user_id=str(user),
        project_id=None,
        workspace=tmp_path,
        tool_call_id="c",
        step_key="k",
        emit=lambda *_: None,
        library=LibraryEndpoint(url=library.url, internal_token=TOKEN),
    )
    # The job's span, as the worker holds it while a tool runs.
    trace_id = secrets.randbits(128)
    job_span = NonRecordingSpan(
        SpanContext(trace_id, secrets.randbits(64), is_remote=False, trace_flags=TraceFlags(1))
    )
    with trace.use_span(job_span):
        result = tool.run(
            tool.parse({"query": "quasi-convex flow converges", "mode": "survey"}), ctx
        )
    assert result.data["items"][0]["document_id"] == doc_id
    assert "A Note on Quasi-Convex Flows" in result.content
    assert "Every quasi-convex flow with bounded curvature converges" in result.content

    names = _span_names(session_factory, format(trace_id, "032x"))
    assert {"GET /search", "library.search"} <= names, names
    metrics = httpx.get(f"{library.url}/metrics", timeout=10)
    assert metrics.status_code == 200
    assert 'leaflab_library_search_duration_seconds_count{mode="survey"}' in metrics.text
    assert "leaflab_library_ingest_duration_seconds_count" in metrics.text

    with pytest.raises(ToolError) as info:
        tool.parse({"query": "", "mode": "nope"})
    assert info.value.code == "invalid_arguments"


def _span_names(factory: sessionmaker[Session], trace_id: str) -> set[str]:
    deadline = time.monotonic() + 30  # spans are exported in batches
    names: set[str] = set()
    while time.monotonic() < deadline:
        with factory() as db:
            names = set(db.scalars(select(SpanRecord.name).where(SpanRecord.trace_id == trace_id)))
        if "library.search" in names:
            return names
        time.sleep(0.5)
    return names
