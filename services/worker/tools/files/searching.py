"""glob and grep over the session workspace, bounded in time and output.

Both walk the tree without following directory symlinks, so a link to ``/``
planted inside the workspace cannot make a search roam the host.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import regex
from pydantic import BaseModel, ConfigDict, Field

from services.worker.tools.base import Tool, ToolContext, ToolEffect, ToolError, ToolResult
from services.worker.tools.files.reading import iter_lines
from services.worker.tools.workspace import (
    MAX_PATH_CHARS,
    SKIPPED_DIRS,
    SNIFF_BYTES,
    looks_binary,
    open_regular,
    outside,
    relative,
    resolve,
    workspace_root,
)

MAX_GLOB_RESULTS = 1000
MAX_SCANNED_ENTRIES = 100_000
MAX_GREP_RESULTS = 1000
DEFAULT_GREP_RESULTS = 200
MAX_GREP_SECONDS = 5.0
# Matching only sees this much of a line: the cheap half of the regex-DoS guard
# (the other half is the regex module's per-search timeout).
MAX_MATCH_LINE_BYTES = 10_000
MAX_SHOWN_LINE_CHARS = 300
MAX_GREP_FILE_BYTES = 20_000_000


def glob_regex(pattern: str) -> re.Pattern[str]:
    """Translate a glob (``*``, ``?``, ``[abc]``, ``**/`` for any depth) to a regex."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        if pattern.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and (end := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1 : end]
            negate = body.startswith("!")
            body = re.escape(body[1:] if negate else body).replace("\\-", "-")
            out.append(f"[{'^' if negate else ''}{body}]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def _check_pattern(pattern: str) -> None:
    if "\x00" in pattern:
        raise ToolError("invalid_path", "pattern contains a NUL byte", category="validation")
    if pattern.startswith("/") or ".." in pattern.split("/"):
        raise outside(pattern, "glob patterns must stay inside the workspace")


@dataclass
class Walk:
    """Files under a base directory, in sorted order, with a bound on work done."""

    base: Path
    deadline: float
    scanned: int = 0
    stopped: str | None = None
    extra: dict[str, int] = field(default_factory=dict)

    def files(self) -> Iterator[Path]:
        for dirpath, dirnames, filenames in os.walk(self.base, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
            for name in sorted(filenames):
                self.scanned += 1
                if self.scanned > MAX_SCANNED_ENTRIES:
                    self.stopped = f"scanned {MAX_SCANNED_ENTRIES} files"
                    return
                if time.monotonic() > self.deadline:
                    self.stopped = f"ran for {MAX_GREP_SECONDS:.0f} s"
                    return
                yield Path(dirpath, name)


class GlobArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pattern: str = Field(
        min_length=1,
        max_length=500,
        description="Glob relative to the workspace (or to path): '*' and '?' stay within "
        "one directory, '**/' spans any depth, e.g. '**/*.py' or 'data/*.csv'.",
    )
    path: str = Field(
        default=".",
        max_length=MAX_PATH_CHARS,
        description="Directory to search from, relative to the workspace (default: root).",
    )


class GlobTool(Tool):
    name: ClassVar[str] = "glob"
    description: ClassVar[str] = (
        "List workspace files whose path matches a glob pattern, sorted by path "
        f"(at most {MAX_GLOB_RESULTS}). Paths are returned relative to the workspace."
    )
    args_model: ClassVar[type[BaseModel]] = GlobArgs
    effect: ClassVar[ToolEffect] = ToolEffect.READ_ONLY
    retry_safe: ClassVar[bool] = True

    def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        assert isinstance(args, GlobArgs)
        _check_pattern(args.pattern)
        matcher = glob_regex(args.pattern.removeprefix("./"))
        base = _search_base(ctx, args.path)
        walk = Walk(base=base, deadline=time.monotonic() + MAX_GREP_SECONDS)
        root = workspace_root(ctx.workspace)
        found = [
            f.relative_to(root).as_posix()
            for f in walk.files()
            if matcher.match(f.relative_to(base).as_posix())
        ]
        shown = found[:MAX_GLOB_RESULTS]
        notes = []
        if len(found) > MAX_GLOB_RESULTS:
            notes.append(f"[{len(found) - MAX_GLOB_RESULTS} more matches not shown]")
        if walk.stopped:
            notes.append(f"[search stopped early: {walk.stopped}; narrow the path]")
        body = "\n".join(shown) if shown else f"No files match {args.pattern!r}"
        return ToolResult(
            content="\n".join([body, *notes]),
            data={"files": shown, "total": len(found), "complete": walk.stopped is None},
        )


def _search_base(ctx: ToolContext, path: str) -> Path:
    base = resolve(ctx.workspace, path or ".")
    if not base.exists():
        raise ToolError(
            "file_not_found",
            f"{path!r} does not exist in the workspace",
            details={"path": path},
        )
    return base


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


def compile_pattern(pattern: str, *, ignore_case: bool) -> regex.Pattern[str]:
    """Compile with Python ``re`` syntax (regex VERSION0), errors as a ToolError."""
    flags = regex.VERSION0 | (regex.IGNORECASE if ignore_case else 0)
    try:
        return regex.compile(pattern, flags)
    except (regex.error, OverflowError, RecursionError, ValueError) as exc:
        raise ToolError(
            "invalid_regex",
            f"invalid regular expression {pattern[:200]!r}: {exc}",
            category="validation",
            details={"pattern": pattern[:200]},
        ) from None


@dataclass
class GrepSearch:
    """Matching lines across files, stopping at a result cap or a deadline."""

    rx: regex.Pattern[str]
    root: Path
    limit: int
    deadline: float
    hits: list[str] = field(default_factory=list)
    skipped_binary: int = 0
    skipped_large: int = 0
    stopped: str | None = None

    def scan(self, file: Path) -> bool:
        """Search one file; True means the whole search must stop now."""
        shown = file.relative_to(self.root).as_posix()
        real = file.resolve()
        if not real.is_relative_to(self.root) or not real.is_file():
            return False  # a symlink leading out, a FIFO, a dangling link
        if real.stat().st_size > MAX_GREP_FILE_BYTES:
            self.skipped_large += 1
            return False
        try:
            fh = open_regular(real, shown)
        except ToolError:
            return False  # vanished or replaced since the walk saw it
        with fh:
            if looks_binary(fh.read(SNIFF_BYTES)):
                self.skipped_binary += 1
                return False
            fh.seek(0)
            for lineno, (raw, _cut) in enumerate(iter_lines(fh, MAX_MATCH_LINE_BYTES), start=1):
                if self._match_line(shown, lineno, raw.decode("utf-8", errors="replace")):
                    return True
        return False

    def _match_line(self, shown: str, lineno: int, text: str) -> bool:
        remaining = self.deadline - time.monotonic()
        try:
            if remaining <= 0:
                raise TimeoutError
            hit = self.rx.search(text, timeout=remaining)
        except TimeoutError:
            self.stopped = (
                f"ran for {MAX_GREP_SECONDS:.0f} s (a slow pattern or a large tree); "
                "results are incomplete, narrow the path or simplify the pattern"
            )
            return True
        if hit is None:
            return False
        self.hits.append(f"{shown}:{lineno}:{text[:MAX_SHOWN_LINE_CHARS]}")
        if len(self.hits) >= self.limit:
            self.stopped = f"reached max_results={self.limit}; narrow the search to see more"
            return True
        return False


class GrepTool(Tool):
    name: ClassVar[str] = "grep"
    description: ClassVar[str] = (
        "Search workspace text files for a Python regular expression. Returns "
        "'path:line:text' lines sorted by path; binary files are skipped. Use glob to "
        "restrict which files are searched."
    )
    args_model: ClassVar[type[BaseModel]] = GrepArgs
    effect: ClassVar[ToolEffect] = ToolEffect.READ_ONLY
    retry_safe: ClassVar[bool] = True

    def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        assert isinstance(args, GrepArgs)
        rx = compile_pattern(args.pattern, ignore_case=args.ignore_case)
        base = _search_base(ctx, args.path)
        deadline = time.monotonic() + MAX_GREP_SECONDS
        search = GrepSearch(rx, workspace_root(ctx.workspace), args.max_results, deadline)
        walk: Walk | None = None
        if base.is_dir():
            walk = Walk(base=base, deadline=deadline)
            candidates: Iterator[Path] | list[Path] = self._filtered(walk, args.glob)
        else:
            candidates = [base]
        for file in candidates:
            if search.scan(file):
                break
        stopped = search.stopped or (walk.stopped if walk else None)
        return self._result(args, relative(ctx.workspace, base), search, stopped)

    def _filtered(self, walk: Walk, glob: str | None) -> Iterator[Path]:
        if not glob:
            yield from walk.files()
            return
        _check_pattern(glob)
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
