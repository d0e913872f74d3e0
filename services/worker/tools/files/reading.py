"""read_file: a window of a text file with line numbers, bounded in size."""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from services.worker.tools.base import Tool, ToolContext, ToolEffect, ToolError, ToolResult
from services.worker.tools.workspace import (
    MAX_PATH_CHARS,
    SNIFF_BYTES,
    looks_binary,
    open_regular,
    relative,
    resolve,
)

MAX_LINES = 2000
MAX_OUTPUT_BYTES = 100_000
MAX_LINE_CHARS = 2000


class ReadFileArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(
        min_length=1,
        max_length=MAX_PATH_CHARS,
        description="File path relative to the workspace root, e.g. 'notes/plan.md'.",
    )
    offset: int = Field(
        default=1, ge=1, description="1-based line number to start reading from (default 1)."
    )
    limit: int = Field(
        default=MAX_LINES,
        ge=1,
        le=MAX_LINES,
        description=f"Maximum number of lines to return (default and maximum {MAX_LINES}).",
    )


def iter_lines(fh: IO[bytes], max_bytes: int) -> Iterator[tuple[bytes, bool]]:
    """Yield (line without newline, was_cut), reading at most ``max_bytes`` per line.

    A single multi-gigabyte line must not be pulled into memory, so the rest
    of an over-long line is skipped in bounded chunks.
    """
    while True:
        chunk = fh.readline(max_bytes)
        if not chunk:
            return
        if chunk.endswith(b"\n"):
            yield chunk.rstrip(b"\r\n"), False
            continue
        cut = len(chunk) == max_bytes
        while cut:
            rest = fh.readline(1 << 16)
            if not rest or rest.endswith(b"\n"):
                break
        yield chunk.rstrip(b"\r"), cut


def _render(raw: bytes, cut: bool) -> tuple[str, bool]:
    text = raw.decode("utf-8", errors="replace")
    if cut or len(text) > MAX_LINE_CHARS:
        return text[:MAX_LINE_CHARS] + " [… line cut]", True
    return text, False


class ReadFileTool(Tool[ReadFileArgs]):
    name: ClassVar[str] = "read_file"
    description: ClassVar[str] = (
        "Read a text file from the session workspace. Returns lines numbered like "
        f"`cat -n`, at most {MAX_LINES} lines or {MAX_OUTPUT_BYTES // 1000} KB per call; "
        "use offset/limit to page through longer files. Binary files are refused."
    )
    args_model = ReadFileArgs
    effect: ClassVar[ToolEffect] = ToolEffect.READ_ONLY
    retry_safe: ClassVar[bool] = True

    def run(self, args: ReadFileArgs, ctx: ToolContext) -> ToolResult:
        target = resolve(ctx.workspace, args.path)
        shown = relative(ctx.workspace, target)
        with open_regular(target, args.path) as fh:
            if looks_binary(fh.read(SNIFF_BYTES)):
                raise ToolError(
                    "binary_file",
                    f"{shown!r} looks like a binary file; read_file only shows text",
                    category="validation",
                    details={"path": shown},
                )
            fh.seek(0)
            return self._window(fh, shown, args.offset, args.limit)

    def _window(self, fh: IO[bytes], shown: str, offset: int, limit: int) -> ToolResult:
        lines = iter_lines(fh, MAX_LINE_CHARS * 4)
        out: list[str] = []
        size = 0
        any_cut = False
        seen = 0
        more = False
        for lineno, (raw, was_cut) in enumerate(lines, start=1):
            seen = lineno
            if lineno < offset:
                continue
            text, cut = _render(raw, was_cut)
            row = f"{lineno:>6}\t{text}"
            row_bytes = len(row.encode("utf-8")) + 1
            if len(out) >= limit or size + row_bytes > MAX_OUTPUT_BYTES:
                more = True
                break
            out.append(row)
            size += row_bytes
            any_cut = any_cut or cut
        last = offset + len(out) - 1 if out else seen
        return self._result(shown, out, offset, last, more=more, any_cut=any_cut)

    def _result(
        self, shown: str, out: list[str], offset: int, last: int, *, more: bool, any_cut: bool
    ) -> ToolResult:
        if not out:
            if offset == 1:
                return ToolResult(content=f"({shown} is empty)", data={"path": shown, "lines": 0})
            raise ToolError(
                "offset_out_of_range",
                f"offset {offset} is past the end of {shown!r}, which has {last} lines",
                category="validation",
                details={"path": shown, "total_lines": last},
            )
        notes = []
        if more:
            notes.append(
                f"[truncated: showed lines {offset}-{last}; the file continues, "
                f"call read_file with offset={last + 1} to read more]"
            )
        if any_cut:
            notes.append(f"[lines longer than {MAX_LINE_CHARS} characters were cut]")
        data: dict[str, Any] = {
            "path": shown,
            "start_line": offset,
            "end_line": last,
            "truncated": more,
        }
        return ToolResult(content="\n".join(out + notes), data=data)
