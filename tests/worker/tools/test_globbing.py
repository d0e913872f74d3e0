"""glob: sorted, capped, confined to the workspace."""

from __future__ import annotations

from typing import Any

import pytest

from services.worker.tools.base import Tool, ToolContext, ToolError, ToolResult
from services.worker.tools.files import globbing
from services.worker.tools.files.globbing import GlobTool, glob_regex
from tests.worker.tools.conftest import WriteTree

GLOB = GlobTool()


def call(tool: Tool, ctx: ToolContext, **raw: Any) -> ToolResult:
    return tool.run(tool.parse(raw), ctx)


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

    def test_no_match_and_cap(self, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch) -> None:
        assert call(GLOB, ctx, pattern="*.nothing").content == "No files match '*.nothing'"
        monkeypatch.setattr(globbing, "MAX_GLOB_RESULTS", 10)  # creating 1,000 files is slow
        for i in range(15):
            (ctx.workspace / f"f{i:02d}.txt").touch()
        result = call(GLOB, ctx, pattern="*.txt")
        assert result.data["files"] == [f"f{i:02d}.txt" for i in range(10)]
        assert result.data["total"] == 15
        assert "[5 more matches not shown]" in result.content

    def test_escaping_patterns_refused(self, ctx: ToolContext) -> None:
        for pattern in ["../*", "/etc/*", "a/../../*"]:
            with pytest.raises(ToolError) as err:
                call(GLOB, ctx, pattern=pattern)
            assert err.value.code == "path_outside_workspace"

    @pytest.mark.parametrize(
        "raw", [{}, {"pattern": 5}, {"pattern": "x" * 501}, {"pattern": "*", "recursive": True}]
    )
    def test_invalid_arguments(self, raw: dict[str, Any]) -> None:
        with pytest.raises(ToolError) as err:
            GLOB.parse(raw)
        assert err.value.code == "invalid_arguments"

    def test_order_is_by_full_path(self, ctx: ToolContext, write_tree: WriteTree) -> None:
        write_tree({"a/z.txt": "", "a/b/c.txt": "", "a-b.txt": "", "B.txt": ""})
        assert call(GLOB, ctx, pattern="**/*.txt").data["files"] == [
            "B.txt",
            "a-b.txt",
            "a/b/c.txt",
            "a/z.txt",
        ]
