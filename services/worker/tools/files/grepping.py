"""grep: regex search over workspace text files, bounded in time and output.

Python's ``re`` holds the GIL for a whole match and cannot be interrupted, so
one catastrophic pattern would freeze a worker. The ``regex`` module (same
syntax under VERSION0) takes a per-search timeout; together with a cap on the
line length it bounds the work a model-written pattern can cause.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import regex
from pydantic import BaseModel, ConfigDict, Field

from services.worker.tools.base import Tool, ToolContext, ToolEffect, ToolError, ToolResult
from services.worker.tools.files.globbing import Walk, check_glob_pattern, glob_regex, search_base
from services.worker.tools.workspace import (
    MAX_PATH_CHARS,
    SNIFF_BYTES,
    looks_binary,
    open_regular,
    relative,
    workspace_root,
)

MAX_GREP_RESULTS = 1000
DEFAULT_GREP_RESULTS = 200
MAX_GREP_SECONDS = 5.0
# One search call may use at most this much CPU. The regex timeout counts CPU
# seconds, which stretch in wall time on a busy machine; a short cap per call
# keeps a catastrophic pattern from overrunning the wall-clock budget much.
MAX_SEARCH_CALL_S = 1.0
# Matching only sees this much of a line: the cheap half of the regex-DoS guard.
MAX_MATCH_LINE_CHARS = 10_000
MAX_SHOWN_LINE_CHARS = 300
MAX_GREP_FILE_BYTES = 20_000_000
# Constructs whose result depends on what lies beyond the current line: with
# them, "no match in the whole file" does not imply "no match on any line".
LINE_CONTEXT_TOKENS = ("\\A", "\\Z", "\\z", "\\G", "(?=", "(?!", "(?<", "(?-")


class GrepArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pattern: str = Field(
        min_length=1,
        max_length=1000,
        description="Python regular expression searched in each line, e.g. r'def \\w+\\('.",
    )
    path: str = Field(
        default=".",
        max_length=MAX_PATH_CHARS,
        description="File or directory to search, relative to the workspace (default: root).",
    )
    glob: str | None = Field(
        default=None,
        max_length=500,
        description="Only search files matching this glob, e.g. '*.py' (file name) "
        "or 'src/**/*.tex' (path).",
    )
    ignore_case: bool = Field(default=False, description="Case-insensitive matching.")
    max_results: int = Field(
        default=DEFAULT_GREP_RESULTS,
        ge=1,
        le=MAX_GREP_RESULTS,
        description=f"Maximum matching lines to return (default {DEFAULT_GREP_RESULTS}).",
    )


@dataclass(frozen=True)
class GrepPatterns:
    """The per-line pattern, and a whole-file form when skipping with it is exact.

    One ``search`` over a whole file is far cheaper than one per line (each
    call with a timeout reads a CPU clock), and any per-line match is also a
    match of the MULTILINE form at the same offset, so lines the whole-file
    search skips cannot match. Lookarounds and absolute anchors could break
    that implication; such patterns are matched line by line.
    """

    line: regex.Pattern[str]
    whole_file: regex.Pattern[str] | None


def compile_pattern(pattern: str, *, ignore_case: bool) -> GrepPatterns:
    """Compile with Python ``re`` syntax (regex VERSION0), errors as a ToolError."""
    flags = regex.VERSION0 | (regex.IGNORECASE if ignore_case else 0)
    try:
        line = regex.compile(pattern, flags)
        exact = not any(token in pattern for token in LINE_CONTEXT_TOKENS)
        whole = regex.compile(pattern, flags | regex.MULTILINE) if exact else None
    except (regex.error, OverflowError, RecursionError, ValueError) as exc:
        raise ToolError(
            "invalid_regex",
            f"invalid regular expression {pattern[:200]!r}: {exc}",
            category="validation",
            details={"pattern": pattern[:200]},
        ) from None
    return GrepPatterns(line=line, whole_file=whole)


@dataclass
class GrepSearch:
    """Matching lines across files, stopping at a result cap or a deadline."""

    patterns: GrepPatterns
    root: Path
    limit: int
    deadline: float
    hits: list[str] = field(default_factory=list)
    skipped_binary: int = 0
    skipped_large: int = 0
    stopped: str | None = None

    def __post_init__(self) -> None:
        # Paths from the walk all start with the root; string slicing is much
        # cheaper than Path.relative_to for thousands of files.
        self._prefix = str(self.root).rstrip("/") + "/"

    def scan(self, file: Path) -> bool:
        """Search one file; True means the whole search must stop now."""
        shown = str(file).removeprefix(self._prefix)
        text = self._text(file, shown)
        if text is None:
            return False
        try:
            if self.patterns.whole_file is not None:
                return self._scan_candidates(shown, text, self.patterns.whole_file)
            return self._scan_lines(shown, text)
        except TimeoutError:
            self.stopped = (
                "time limit reached (a slow pattern or a large tree); results are "
                "incomplete, narrow the path or simplify the pattern"
            )
            return True

    def _scan_lines(self, shown: str, text: str) -> bool:
        lines = text.split("\n")
        if text.endswith("\n"):
            lines.pop()
        return any(self._check_line(shown, n, line) for n, line in enumerate(lines, start=1))

    def _scan_candidates(self, shown: str, text: str, whole: regex.Pattern[str]) -> bool:
        """Visit only lines where a whole-file search lands.

        If some line matched on its own at offset t, a whole-file search from
        an earlier line start would stop at or before t; so every line the
        search jumps over is a line without a match.
        """
        pos, lineno, counted = 0, 1, 0
        while pos <= len(text):
            found = self._search(whole, text, pos)
            if found is None:
                return False
            start = text.rfind("\n", 0, found.start()) + 1
            if start == len(text) and text.endswith("\n"):
                return False  # the empty "line" after the final newline is not a line
            end = text.find("\n", found.start())
            end = len(text) if end == -1 else end
            lineno += text.count("\n", counted, start)
            counted = start
            if self._check_line(shown, lineno, text[start:end]):
                return True
            pos = end + 1
        return False

    def _check_line(self, shown: str, lineno: int, line: str) -> bool:
        """Record the line if it matches; True when the result cap is reached."""
        if self._search(self.patterns.line, line[:MAX_MATCH_LINE_CHARS]) is None:
            return False
        self.hits.append(f"{shown}:{lineno}:{line[:MAX_SHOWN_LINE_CHARS]}")
        if len(self.hits) >= self.limit:
            self.stopped = f"reached max_results={self.limit}; narrow the search to see more"
            return True
        return False

    def _search(self, rx: regex.Pattern[str], text: str, pos: int = 0) -> regex.Match[str] | None:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        return rx.search(text, pos=pos, timeout=min(remaining, MAX_SEARCH_CALL_S))

    def _text(self, file: Path, shown: str) -> str | None:
        real = file
        if file.is_symlink():
            # The walk never enters linked directories, so only the last
            # component can be a link; resolving every file would cost more.
            real = file.resolve()
            if not real.is_relative_to(self.root):
                return None
        try:
            with open_regular(real, shown) as fh:
                raw = fh.read(MAX_GREP_FILE_BYTES + 1)
        except ToolError:
            return None  # a FIFO, a dangling link, or replaced since the walk saw it
        if len(raw) > MAX_GREP_FILE_BYTES:
            self.skipped_large += 1
            return None
        if looks_binary(raw[:SNIFF_BYTES]):
            self.skipped_binary += 1
            return None
        # One line convention for both passes, so they agree on what "$" sees.
        return raw.decode("utf-8", errors="replace").replace("\r\n", "\n")


class GrepTool(Tool[GrepArgs]):
    name: ClassVar[str] = "grep"
    description: ClassVar[str] = (
        "Search workspace text files for a Python regular expression. Returns "
        "'path:line:text' lines sorted by path; binary files are skipped. Use glob to "
        "restrict which files are searched."
    )
    args_model = GrepArgs
    effect: ClassVar[ToolEffect] = ToolEffect.READ_ONLY
    retry_safe: ClassVar[bool] = True

    def run(self, args: GrepArgs, ctx: ToolContext) -> ToolResult:
        patterns = compile_pattern(args.pattern, ignore_case=args.ignore_case)
        base = search_base(ctx, args.path)
        deadline = time.monotonic() + MAX_GREP_SECONDS
        search = GrepSearch(patterns, workspace_root(ctx.workspace), args.max_results, deadline)
        walk: Walk | None = None
        candidates: Iterator[Path] | list[Path] = [base]
        if base.is_dir():
            walk = Walk(base=base, deadline=deadline, budget_s=MAX_GREP_SECONDS)
            candidates = self._filtered(walk, args.glob)
        for file in candidates:
            if search.scan(file):
                break
        stopped = search.stopped or (walk.stopped if walk else None)
        return self._result(args, relative(ctx.workspace, base), search, stopped)

    def _filtered(self, walk: Walk, glob: str | None) -> Iterator[Path]:
        if not glob:
            yield from walk.files()
            return
        check_glob_pattern(glob)
        matcher = glob_regex(glob.removeprefix("./"))
        by_path = "/" in glob
        for file in walk.files():
            subject = file.relative_to(walk.base).as_posix() if by_path else file.name
            if matcher.match(subject):
                yield file

    def _result(
        self, args: GrepArgs, where: str, search: GrepSearch, stopped: str | None
    ) -> ToolResult:
        notes = []
        if stopped:
            notes.append(f"[search stopped: {stopped}]")
        if search.skipped_binary or search.skipped_large:
            notes.append(
                f"[skipped {search.skipped_binary} binary and "
                f"{search.skipped_large} oversized files]"
            )
        body = search.hits or [f"No matches for {args.pattern!r} in {where}"]
        return ToolResult(
            content="\n".join(body + notes),
            data={
                "matches": len(search.hits),
                "complete": stopped is None,
                "skipped_binary": search.skipped_binary,
                "skipped_large": search.skipped_large,
            },
        )
