"""read_file: numbered windows of text, bounded output, clear refusals."""

from __future__ import annotations

import os
from typing import Any

import pytest

from services.worker.tools.base import ToolContext, ToolError, ToolResult
from services.worker.tools.files.reading import (
    MAX_LINE_CHARS,
    MAX_LINES,
    MAX_OUTPUT_BYTES,
    ReadFileTool,
)

TOOL = ReadFileTool()


def read(ctx: ToolContext, **raw: Any) -> ToolResult:
    return TOOL.run(TOOL.parse(raw), ctx)


class TestReading:
    def test_numbered_like_cat_n(self, ctx: ToolContext) -> None:
        (ctx.workspace / "notes").mkdir()
        (ctx.workspace / "notes" / "a.md").write_text("alpha\nbeta\r\ngamma")
        result = read(ctx, path="notes/a.md")
        assert result.content == "     1\talpha\n     2\tbeta\n     3\tgamma"
        assert result.data == {
            "path": "notes/a.md",
            "start_line": 1,
            "end_line": 3,
            "truncated": False,
        }

    def test_offset_and_limit_page_through(self, ctx: ToolContext) -> None:
        (ctx.workspace / "n.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
        result = read(ctx, path="n.txt", offset=4, limit=3)
        assert result.content.splitlines()[:3] == [
            "     4\tline 4",
            "     5\tline 5",
            "     6\tline 6",
        ]
        assert "offset=7" in result.content
        assert result.data["truncated"] is True

    def test_line_cap_says_truncated(self, ctx: ToolContext) -> None:
        (ctx.workspace / "big.txt").write_text("x\n" * (MAX_LINES + 50))
        result = read(ctx, path="big.txt")
        assert result.content.count("\tx") == MAX_LINES
        assert f"offset={MAX_LINES + 1}" in result.content

    def test_byte_cap_says_truncated(self, ctx: ToolContext) -> None:
        (ctx.workspace / "wide.txt").write_text(("y" * 1000 + "\n") * 500)
        result = read(ctx, path="wide.txt")
        assert len(result.content.encode()) <= MAX_OUTPUT_BYTES + 200
        assert "[truncated" in result.content

    def test_very_long_single_line_is_cut(self, ctx: ToolContext) -> None:
        (ctx.workspace / "one.txt").write_text("z" * 3_000_000)
        result = read(ctx, path="one.txt")
        assert len(result.content) < MAX_LINE_CHARS + 200
        assert "line cut" in result.content

    def test_empty_file(self, ctx: ToolContext) -> None:
        (ctx.workspace / "e.txt").write_text("")
        assert read(ctx, path="e.txt").content == "(e.txt is empty)"

    def test_invalid_utf8_in_text_is_replaced_not_fatal(self, ctx: ToolContext) -> None:
        (ctx.workspace / "l1.txt").write_bytes(b"caf\xe9 au lait\n")
        assert "caf\ufffd au lait" in read(ctx, path="l1.txt").content


class TestRefusals:
    def test_binary_file(self, ctx: ToolContext) -> None:
        (ctx.workspace / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
        with pytest.raises(ToolError) as err:
            read(ctx, path="img.png")
        assert err.value.code == "binary_file"

    def test_missing_file(self, ctx: ToolContext) -> None:
        with pytest.raises(ToolError) as err:
            read(ctx, path="nope.txt")
        assert err.value.code == "file_not_found"
        assert "glob" in err.value.message

    def test_directory(self, ctx: ToolContext) -> None:
        (ctx.workspace / "d").mkdir()
        with pytest.raises(ToolError) as err:
            read(ctx, path="d")
        assert err.value.code == "is_directory"

    def test_fifo_does_not_hang(self, ctx: ToolContext) -> None:
        os.mkfifo(ctx.workspace / "pipe")
        with pytest.raises(ToolError) as err:
            read(ctx, path="pipe")
        assert err.value.code == "not_a_regular_file"

    def test_offset_past_end(self, ctx: ToolContext) -> None:
        (ctx.workspace / "s.txt").write_text("a\nb\n")
        with pytest.raises(ToolError) as err:
            read(ctx, path="s.txt", offset=10)
        assert err.value.code == "offset_out_of_range"
        assert err.value.details["total_lines"] == 2

    @pytest.mark.parametrize(
        "raw",
        [
            {},
            {"path": 42},
            {"path": ""},
            {"path": "a.txt", "offset": 0},
            {"path": "a.txt", "limit": MAX_LINES + 1},
            {"path": "a.txt", "offset": "many"},
            {"path": "a.txt", "colour": "red"},
        ],
    )
    def test_invalid_arguments_never_run(self, ctx: ToolContext, raw: dict[str, Any]) -> None:
        with pytest.raises(ToolError) as err:
            TOOL.parse(raw)
        assert err.value.code == "invalid_arguments"
        assert err.value.category == "validation"
