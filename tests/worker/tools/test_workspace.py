"""Path confinement: hostile paths are refused by every file tool, nothing leaks."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from services.worker.tools.base import Tool, ToolContext, ToolError
from services.worker.tools.files import file_tools
from services.worker.tools.workspace import resolve

TOOLS = {tool.name: tool for tool in file_tools()}


def call(name: str, raw: dict[str, Any], ctx: ToolContext) -> str:
    tool: Tool[Any] = TOOLS[name]
    args = tool.parse(raw)
    tool.intent(args, ctx)  # edits plan (and so check the path) before running
    return tool.run(args, ctx).content


def path_calls(path: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("read_file", {"path": path}),
        ("write_file", {"path": path, "content": "pwned"}),
        ("edit_file", {"path": path, "old_string": "root", "new_string": "toor"}),
        ("grep", {"pattern": "root", "path": path}),
        ("glob", {"pattern": "*", "path": path}),
    ]


class TestHostilePaths:
    @pytest.mark.parametrize(
        "path", ["../../etc/passwd", "/etc/passwd", "a/../../x", "..", "sub/../../../etc/passwd"]
    )
    def test_escapes_are_refused_by_every_tool(self, ctx: ToolContext, path: str) -> None:
        (ctx.workspace / "sub").mkdir()
        for name, raw in path_calls(path):
            with pytest.raises(ToolError) as err:
                call(name, raw, ctx)
            assert err.value.code == "path_outside_workspace", (name, err.value.message)
        assert not (ctx.workspace.parent / "x").exists()

    def test_symlink_to_etc_inside_workspace(self, ctx: ToolContext) -> None:
        (ctx.workspace / "etc").symlink_to("/etc")
        for name, raw in path_calls("etc/passwd"):
            with pytest.raises(ToolError) as err:
                call(name, raw, ctx)
            assert err.value.code == "path_outside_workspace", name
        assert "etc/passwd" not in call("glob", {"pattern": "**/*"}, ctx)
        assert "No matches" in call("grep", {"pattern": "root:"}, ctx)

    def test_symlinked_file_pointing_out_is_not_written_through(
        self, ctx: ToolContext, tmp_path: Path
    ) -> None:
        secret = tmp_path / "secret.txt"
        secret.write_text("keep me\n")
        (ctx.workspace / "link.txt").symlink_to(secret)
        with pytest.raises(ToolError) as err:
            call("write_file", {"path": "link.txt", "content": "overwritten"}, ctx)
        assert err.value.code == "path_outside_workspace"
        assert secret.read_text() == "keep me\n"

    def test_grep_skips_file_links_leading_out(self, ctx: ToolContext, tmp_path: Path) -> None:
        secret = tmp_path / "secret.txt"
        secret.write_text("password=hunter2\n")
        (ctx.workspace / "leak.txt").symlink_to(secret)
        (ctx.workspace / "real.txt").write_text("password=inside\n")
        (ctx.workspace / "alias.txt").symlink_to(ctx.workspace / "real.txt")
        assert call("grep", {"pattern": "password"}, ctx).splitlines() == [
            "alias.txt:1:password=inside",
            "real.txt:1:password=inside",
        ]

    def test_nul_byte_and_long_paths_are_invalid(self, ctx: ToolContext) -> None:
        for path in ["notes\x00.md", "a" * 300, "/".join(["d"] * 600)]:
            with pytest.raises(ToolError) as err:
                resolve(ctx.workspace, path)
            assert err.value.code == "invalid_path"
        with pytest.raises(ToolError) as err:
            call("write_file", {"path": "x" * 5000, "content": "x"}, ctx)
        assert err.value.code == "invalid_arguments"

    def test_symlink_loop_is_a_clear_error(self, ctx: ToolContext) -> None:
        os.symlink("loop_b", ctx.workspace / "loop_a")
        os.symlink("loop_a", ctx.workspace / "loop_b")
        with pytest.raises(ToolError) as err:
            call("read_file", {"path": "loop_a"}, ctx)
        assert err.value.code in {"invalid_path", "path_outside_workspace"}


class TestInsidePathsStillWork:
    def test_dot_dot_that_stays_inside_is_fine(self, ctx: ToolContext) -> None:
        (ctx.workspace / "a").mkdir()
        call("write_file", {"path": "a/../b.txt", "content": "ok\n"}, ctx)
        assert (ctx.workspace / "b.txt").read_text() == "ok\n"

    def test_symlink_within_workspace_is_followed(self, ctx: ToolContext) -> None:
        (ctx.workspace / "real").mkdir()
        (ctx.workspace / "real" / "f.txt").write_text("inside\n")
        (ctx.workspace / "alias").symlink_to(ctx.workspace / "real")
        assert "inside" in call("read_file", {"path": "alias/f.txt"}, ctx)
