"""The eval CLI on a tiny SciFact subset, and the agent tool against the real service."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from sqlalchemy.orm import Session, sessionmaker

from services.cli.library_cmd import library as library_cli
from services.worker.tools.base import ToolContext, ToolError
from services.worker.tools.library_search import library_tools
from services.worker.tools.ports import LibraryEndpoint
from tests.library.conftest import PDF_DIR, TOKEN, LibraryService, make_user

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


def test_tool_returns_locators(
    library: LibraryService, session_factory: sessionmaker[Session], unique: str, tmp_path: Path
) -> None:
    user = make_user(session_factory, unique)
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
    result = tool.run(tool.parse({"query": "anything at all", "mode": "survey"}), ctx)
    assert result.content == "No passages found in the library."
    try:
        tool.parse({"query": "", "mode": "nope"})
    except ToolError as exc:
        assert exc.code == "invalid_arguments"
    else:
        raise AssertionError("invalid arguments accepted")
