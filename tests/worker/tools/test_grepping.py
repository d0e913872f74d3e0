"""grep: path:line:text results, capped, and safe against slow patterns."""

from __future__ import annotations

import re
from typing import Any

import pytest

from services.worker.tools.base import Tool, ToolContext, ToolError, ToolResult
from services.worker.tools.files import grepping
from services.worker.tools.files.grepping import GrepTool
from tests.worker.tools.conftest import WriteTree

GREP = GrepTool()


def call(tool: Tool, ctx: ToolContext, **raw: Any) -> ToolResult:
    return tool.run(tool.parse(raw), ctx)


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

    def test_result_cap(self, ctx: ToolContext, write_tree: WriteTree) -> None:
        write_tree({"many.txt": "hit\n" * 50})
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
        self, ctx: ToolContext, write_tree: WriteTree, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # the regex timeout counts CPU seconds; wall time stretches on a busy machine
        monkeypatch.setattr(grepping, "MAX_GREP_SECONDS", 0.2)
        write_tree({"a.txt": "ok\n" + "a" * 60 + "b\n"})
        result = call(GREP, ctx, pattern=r"(a|aa)+$")  # time: bench/tools_files.py
        assert "search stopped" in result.content
        assert result.data["complete"] is False

    def test_giant_single_line_is_bounded(self, ctx: ToolContext, write_tree: WriteTree) -> None:
        write_tree({"blob.txt": "x" * 3_000_000 + "NEEDLE\n", "small.txt": "NEEDLE\n"})
        result = call(GREP, ctx, pattern="NEEDLE")  # time: bench/tools_files.py
        # only the first MAX_MATCH_LINE_CHARS of a line are searched
        assert result.content.splitlines() == ["small.txt:1:NEEDLE"]

    @pytest.mark.parametrize(
        "raw", [{}, {"pattern": ""}, {"pattern": "x", "max_results": 0}, {"pattern": ["x"]}]
    )
    def test_invalid_arguments(self, raw: dict[str, Any]) -> None:
        with pytest.raises(ToolError) as err:
            GREP.parse(raw)
        assert err.value.code == "invalid_arguments"


class TestSameAnswersAsPerLineRe:
    """The whole-file prefilter must never hide a line that plain ``re`` would match."""

    TEXTS = [
        "alpha beta\r\n  def run(x):\r\nbeta$\n\nend alpha\nTODO: x\nfoo\tbar\n",
        "\n\nalpha alpha\nbeta\n  def\nx alpha",
    ]

    @pytest.mark.parametrize("text", TEXTS)
    @pytest.mark.parametrize(
        "pattern",
        [
            r"^def",
            r"^\s+def",
            r"alpha$",
            r"\Aend",
            r"alpha\Z",
            r"beta(?!\s)",
            r"(?<=end )alpha",
            r"^$",
            r"\bx\b",
            r"foo\sbar",
            r"beta\$",
            r"(?i)todo",
            r"a.*a",
            r"beta\s+def",
            r"a",
        ],
    )
    def test_matches_equal_plain_re(
        self, ctx: ToolContext, write_tree: WriteTree, pattern: str, text: str
    ) -> None:
        write_tree({"t.txt": text.encode()})
        rx = re.compile(pattern)
        lines = text.replace("\r\n", "\n").split("\n")
        lines = lines[:-1] if text.endswith("\n") else lines
        expected = [f"t.txt:{n}:{line}" for n, line in enumerate(lines, 1) if rx.search(line)]
        got = call(GREP, ctx, pattern=pattern).content.splitlines()
        assert got == (expected or [f"No matches for {pattern!r} in ."])
