"""glob over the session workspace, and the bounded tree walk grep shares.

The walk never follows directory symlinks, so a link to ``/`` planted inside
the workspace cannot make a search roam the host.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from services.common.globs import glob_source
from services.worker.tools.base import Tool, ToolContext, ToolEffect, ToolError, ToolResult
from services.worker.tools.workspace import (
    MAX_PATH_CHARS,
    SKIPPED_DIRS,
    outside,
    resolve,
    workspace_root,
)

MAX_GLOB_RESULTS = 1000
MAX_SCANNED_ENTRIES = 100_000
MAX_WALK_SECONDS = 5.0


def glob_regex(pattern: str) -> re.Pattern[str]:
    """Translate a glob (``*``, ``?``, ``[abc]``, ``**/`` for any depth) to a regex."""
    return re.compile(glob_source(pattern) + r"\Z", re.DOTALL)


def check_glob_pattern(pattern: str) -> None:
    """Refuse glob patterns that name something outside the workspace."""
    if "\x00" in pattern:
        raise ToolError("invalid_path", "pattern contains a NUL byte", category="validation")
    if pattern.startswith("/") or ".." in pattern.split("/"):
        raise outside(pattern, "glob patterns must stay inside the workspace")


@dataclass
class Walk:
    """Files under a base directory, in sorted order, with a bound on work done."""

    base: Path
    deadline: float
    budget_s: float = MAX_WALK_SECONDS
    scanned: int = 0
    stopped: str | None = None

    def files(self) -> Iterator[Path]:
        """Yield files sorted by their path, stopping at the deadline."""
        for path in sorted(self._collect(), key=lambda p: p.as_posix()):
            if time.monotonic() > self.deadline:
                self.stopped = f"ran for {self.budget_s:g} s"
                return
            yield path

    def _collect(self) -> list[Path]:
        found: list[Path] = []
        for dirpath, dirnames, filenames in os.walk(self.base, followlinks=False):
            dirnames[:] = [d for d in dirnames if d not in SKIPPED_DIRS]
            for name in filenames:
                self.scanned += 1
                if self.scanned > MAX_SCANNED_ENTRIES:
                    self.stopped = f"scanned {MAX_SCANNED_ENTRIES} files"
                    return found
                if self.scanned % 1000 == 0 and time.monotonic() > self.deadline:
                    self.stopped = f"ran for {self.budget_s:g} s"
                    return found
                found.append(Path(dirpath, name))
        return found


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


class GlobTool(Tool[GlobArgs]):
    name: ClassVar[str] = "glob"
    description: ClassVar[str] = (
        "List workspace files whose path matches a glob pattern, sorted by path "
        f"(at most {MAX_GLOB_RESULTS}). Paths are returned relative to the workspace."
    )
    args_model = GlobArgs
    effect: ClassVar[ToolEffect] = ToolEffect.READ_ONLY
    retry_safe: ClassVar[bool] = True

    def run(self, args: GlobArgs, ctx: ToolContext) -> ToolResult:
        check_glob_pattern(args.pattern)
        matcher = glob_regex(args.pattern.removeprefix("./"))
        base = search_base(ctx, args.path)
        walk = Walk(base=base, deadline=time.monotonic() + MAX_WALK_SECONDS)
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


def search_base(ctx: ToolContext, path: str) -> Path:
    """The existing file or directory a search starts from, inside the workspace."""
    base = resolve(ctx.workspace, path or ".")
    if not base.exists():
        raise ToolError(
            "file_not_found",
            f"{path!r} does not exist in the workspace",
            details={"path": path},
        )
    return base
