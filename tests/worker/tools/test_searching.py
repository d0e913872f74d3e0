"""glob and grep: sorted, capped, confined, and safe against slow patterns."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from services.worker.tools.base import Tool, ToolContext, ToolError, ToolResult
from services.worker.tools.files import grepping
from services.worker.tools.files.globbing import MAX_GLOB_RESULTS, GlobTool, glob_regex
from services.worker.tools.files.grepping import GrepTool

GLOB = GlobTool()
GREP = GrepTool()


def call(tool: Tool, ctx: ToolContext, **raw: Any) -> ToolResult:
    return tool.run(tool.parse(raw), ctx)


def tree(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, body in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(body, bytes):
            path.write_bytes(body)
        else:
            path.write_text(body)


@pytest.fixture
def project(ctx: ToolContext) -> ToolContext:
    tree(
        ctx.workspace,
        {
            "README.md": "Leaflab notes\nTODO: cite paper\n",
            "src/main.py": "def main():\n    return 1  # TODO later\n",
            "src/pkg/util.py": "def helper(x):\n    return x\n",
            "src/pkg/data.bin": b"\x00\x01TODO\x00",
            "paper/draft.tex": "\\section{Intro}\nTODO: write\n",
            ".git/config": "TODO inside git\n",
        },
    )
    return ctx


class TestGlobTranslation:
    @pytest.mark.parametrize(
        ("pattern", "path", "hit"),
        [
            ("*.py", "main.py", True),
            ("*.py", "src/main.py", False),
            ("**/*.py", "main.py", True),
            ("**/*.py", "src/pkg/util.py", True),
            ("src/**", "src/a/b.txt", True),
            ("data_?.csv", "data_1.csv", True),
            ("data_[0-9].csv", "data_x.csv", False),
            ("data_[!0-9].csv", "data_x.csv", True),
            ("a+b(c).txt", "a+b(c).txt", True),
        ],
    )
    def test_matches(self, pattern: str, path: str, hit: bool) -> None:
        assert bool(glob_regex(pattern).match(path)) is hit


class TestGlob:
    def test_sorted_workspace_relative(self, project: ToolContext) -> None:
        result = call(GLOB, project, pattern="**/*.py")
        assert result.content.splitlines() == ["src/main.py", "src/pkg/util.py"]
        assert result.data["complete"] is True

    def test_base_path_and_skipped_vcs(self, project: ToolContext) -> None:
        assert call(GLOB, project, pattern="*", path="src/pkg").data["files"] == [
            "src/pkg/data.bin",
            "src/pkg/util.py",
        ]
        assert ".git/config" not in call(GLOB, project, pattern="**/*").data["files"]

    def test_no_match_and_cap(self, ctx: ToolContext) -> None:
        assert call(GLOB, ctx, pattern="*.nothing").content == "No files match '*.nothing'"
        for i in range(MAX_GLOB_RESULTS + 5):
            (ctx.workspace / f"f{i:04d}.txt").touch()
        result = call(GLOB, ctx, pattern="*.txt")
        assert len(result.data["files"]) == MAX_GLOB_RESULTS
        assert "[5 more matches not shown]" in result.content

    def test_escaping_patterns_refused(self, ctx: ToolContext) -> None:
        for pattern in ["../*", "/etc/*", "a/../../*"]:
            with pytest.raises(ToolError) as err:
                call(GLOB, ctx, pattern=pattern)
            assert err.value.code == "path_outside_workspace"


class TestGrep:
    def test_path_line_text_sorted_binary_skipped(self, project: ToolContext) -> None:
        result = call(GREP, project, pattern=r"TODO\b")
        assert result.content.splitlines() == [
            "README.md:2:TODO: cite paper",
            "paper/draft.tex:2:TODO: write",
            "src/main.py:2:    return 1  # TODO later",
            "[skipped 1 binary and 0 oversized files]",
        ]

    def test_glob_filter_by_name_and_path(self, project: ToolContext) -> None:
        by_name = call(GREP, project, pattern="TODO", glob="*.py")
        assert by_name.content.splitlines() == ["src/main.py:2:    return 1  # TODO later"]
        by_path = call(GREP, project, pattern="TODO", glob="paper/**/*.tex")
        assert by_path.content.splitlines() == ["paper/draft.tex:2:TODO: write"]

    def test_single_file_ignore_case_and_no_match(self, project: ToolContext) -> None:
        result = call(GREP, project, pattern="leaflab", path="README.md", ignore_case=True)
        assert result.content == "README.md:1:Leaflab notes"
        empty = call(GREP, project, pattern="zzz").content.splitlines()
        assert empty == ["No matches for 'zzz' in .", "[skipped 1 binary and 0 oversized files]"]

    def test_result_cap(self, ctx: ToolContext) -> None:
        tree(ctx.workspace, {"many.txt": "hit\n" * 50})
        result = call(GREP, ctx, pattern="hit", max_results=10)
        assert len([ln for ln in result.content.splitlines() if ln.startswith("many")]) == 10
        assert "max_results=10" in result.content
        assert result.data["complete"] is False

    @pytest.mark.parametrize("pattern", ["(unclosed", "a{2,1}", "*star", "(?P<x"])
    def test_bad_regex_is_a_tool_error(self, ctx: ToolContext, pattern: str) -> None:
        with pytest.raises(ToolError) as err:
            call(GREP, ctx, pattern=pattern)
        assert err.value.code == "invalid_regex"

    def test_catastrophic_pattern_stops_on_time(
        self, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # the regex timeout counts CPU seconds; wall time stretches on a busy machine
        monkeypatch.setattr(grepping, "MAX_GREP_SECONDS", 0.2)
        tree(ctx.workspace, {"a.txt": "ok\n" + "a" * 60 + "b\n"})
        started = time.monotonic()
        result = call(GREP, ctx, pattern=r"(a|aa)+$")
        assert time.monotonic() - started < 5
        assert "search stopped" in result.content
        assert result.data["complete"] is False

    def test_giant_single_line_is_bounded(self, ctx: ToolContext) -> None:
        tree(ctx.workspace, {"blob.txt": "x" * 3_000_000 + "NEEDLE\n", "small.txt": "NEEDLE\n"})
        started = time.monotonic()
        result = call(GREP, ctx, pattern="NEEDLE")
        assert time.monotonic() - started < 2
        # only the first MAX_MATCH_LINE_CHARS of a line are searched
        assert result.content.splitlines() == ["small.txt:1:NEEDLE"]

    @pytest.mark.parametrize(
        "raw", [{}, {"pattern": ""}, {"pattern": "x", "max_results": 0}, {"pattern": ["x"]}]
    )
    def test_invalid_arguments(self, raw: dict[str, Any]) -> None:
        with pytest.raises(ToolError) as err:
            GREP.parse(raw)
        assert err.value.code == "invalid_arguments"
