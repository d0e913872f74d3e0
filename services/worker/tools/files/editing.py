"""write_file and edit_file: exactly-once workspace edits.

Both tools are WORKSPACE_EDIT: before applying, the runtime records
``intent()`` (the SHA-256 of the file's post-state); after a crash between
applying and recording the result, ``is_applied()`` sees the file already in
that state, so the edit is never applied twice.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from services.worker.tools.base import Tool, ToolContext, ToolEffect, ToolError, ToolResult
from services.worker.tools.workspace import (
    MAX_PATH_CHARS,
    SNIFF_BYTES,
    looks_binary,
    open_regular,
    relative,
    resolve,
    sha256_bytes,
    sha256_file,
    workspace_root,
    write_atomic,
)

MAX_WRITE_BYTES = 5_000_000
MAX_DIFF_CHARS = 20_000
# difflib is super-linear on large, very different inputs; beyond this the
# diff is omitted rather than stalling the worker.
MAX_DIFF_INPUT_CHARS = 1_000_000

PATH_DESCRIPTION = "File path relative to the workspace root, e.g. 'report/draft.md'."


def _check_encoded_size(text: str, what: str) -> str:
    size = len(text.encode("utf-8"))
    if size > MAX_WRITE_BYTES:
        raise ValueError(f"{what} is {size} bytes in UTF-8; the limit is {MAX_WRITE_BYTES}")
    return text


def unified_diff(shown: str, before: str, after: str) -> str:
    """A unified diff of one file, bounded in size for the model and the UI."""
    if len(before) + len(after) > MAX_DIFF_INPUT_CHARS:
        return f"(diff omitted: {shown} is too large to diff)"
    lines = difflib.unified_diff(
        before.splitlines(), after.splitlines(), f"a/{shown}", f"b/{shown}", lineterm=""
    )
    diff = "\n".join(lines)
    if len(diff) > MAX_DIFF_CHARS:
        return diff[:MAX_DIFF_CHARS] + "\n[… diff truncated]"
    return diff


def read_text(target: Path, shown: str) -> tuple[bytes, str]:
    """The raw bytes and strict UTF-8 text of a file an edit will rewrite."""
    with open_regular(target, shown) as fh:
        raw = fh.read(MAX_WRITE_BYTES + 1)
    if len(raw) > MAX_WRITE_BYTES:
        raise ToolError(
            "file_too_large",
            f"{shown!r} is larger than {MAX_WRITE_BYTES} bytes; it cannot be edited here",
            category="validation",
            details={"path": shown},
        )
    try:
        if looks_binary(raw[:SNIFF_BYTES]):
            raise UnicodeError
        return raw, raw.decode("utf-8")
    except UnicodeError:
        raise ToolError(
            "binary_file",
            f"{shown!r} is not UTF-8 text; edit_file only changes text files",
            category="validation",
            details={"path": shown},
        ) from None


def _target(ctx: ToolContext, path: str) -> tuple[Path, str]:
    target = resolve(ctx.workspace, path, create_root=True)
    shown = relative(ctx.workspace, target)
    if target == workspace_root(ctx.workspace) or target.is_dir():
        raise ToolError(
            "is_directory",
            f"{shown!r} is a directory, not a file",
            category="validation",
            details={"path": shown},
        )
    return target, shown


def _apply(target: Path, shown: str, data: bytes) -> None:
    try:
        write_atomic(target, data)
    except OSError as exc:
        # e.g. a parent component is an existing file, or the disk is full
        raise ToolError(
            "write_failed", f"cannot write {shown!r}: {exc.strerror}", details={"path": shown}
        ) from None


def _already_in_state(ctx: ToolContext, intent: dict[str, Any]) -> bool:
    try:
        target = resolve(ctx.workspace, str(intent["path"]))
    except ToolError:
        return False  # the path is no longer safe: run() will refuse it clearly
    return sha256_file(target) == intent["sha256"]


def _write_diff(target: Path, shown: str, content: str) -> str:
    """The change a write makes: against the old text, or all-new lines."""
    if not target.is_file():
        return unified_diff(shown, "", content)
    if target.stat().st_size > MAX_DIFF_INPUT_CHARS:
        return f"(diff omitted: {shown} is too large to diff)"
    try:
        return unified_diff(shown, read_text(target, shown)[1], content)
    except ToolError:
        return "(diff omitted: the previous content was not text)"


class WriteFileArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1, max_length=MAX_PATH_CHARS, description=PATH_DESCRIPTION)
    content: str = Field(
        max_length=MAX_WRITE_BYTES,
        description=f"The complete new file content (UTF-8, at most {MAX_WRITE_BYTES} bytes).",
    )

    @field_validator("content")
    @classmethod
    def _fits(cls, value: str) -> str:
        return _check_encoded_size(value, "content")


class WriteFileTool(Tool[WriteFileArgs]):
    name: ClassVar[str] = "write_file"
    description: ClassVar[str] = (
        "Create or overwrite a file in the session workspace with the given content. "
        "Parent directories are created. Prefer edit_file for small changes to existing files."
    )
    args_model = WriteFileArgs
    effect: ClassVar[ToolEffect] = ToolEffect.WORKSPACE_EDIT
    retry_safe: ClassVar[bool] = False

    def intent(self, args: WriteFileArgs, ctx: ToolContext) -> dict[str, Any]:
        target, shown = _target(ctx, args.path)
        data = args.content.encode("utf-8")
        previous = sha256_file(target)
        return {
            "tool": self.name,
            "path": shown,
            "sha256": sha256_bytes(data),
            "existed_before": previous is not None,
            "previous_sha256": previous,
            "bytes": len(data),
            # shown to a human when the runtime asks for approval of this write
            "diff": _write_diff(target, shown, args.content),
        }

    def is_applied(self, intent: dict[str, Any], ctx: ToolContext) -> bool:
        return _already_in_state(ctx, intent)

    def run(self, args: WriteFileArgs, ctx: ToolContext) -> ToolResult:
        target, shown = _target(ctx, args.path)
        existed = target.is_file()
        diff = _write_diff(target, shown, args.content)
        data = args.content.encode("utf-8")
        _apply(target, shown, data)
        lines = len(args.content.splitlines())
        verb = "Overwrote" if existed else "Created"
        return ToolResult(
            content=f"{verb} {shown} ({lines} lines, {len(data)} bytes)",
            data={
                "path": shown,
                "sha256": sha256_bytes(data),
                "bytes": len(data),
                "created": not existed,
                "diff": diff,
            },
        )


class EditFileArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1, max_length=MAX_PATH_CHARS, description=PATH_DESCRIPTION)
    old_string: str = Field(
        min_length=1,
        max_length=MAX_WRITE_BYTES,
        description="Exact text to replace, including whitespace; must occur exactly once "
        "unless replace_all is true. Copy it from read_file output without line numbers.",
    )
    new_string: str = Field(
        max_length=MAX_WRITE_BYTES, description="Replacement text (may be empty to delete)."
    )
    replace_all: bool = Field(
        default=False, description="Replace every occurrence instead of requiring exactly one."
    )

    @model_validator(mode="after")
    def _differs(self) -> EditFileArgs:
        if self.old_string == self.new_string:
            raise ValueError("old_string and new_string are identical; nothing would change")
        return self


@dataclass(frozen=True)
class EditPlan:
    """What an edit will do, computed from the file as it is now."""

    target: Path
    shown: str
    before_sha256: str
    after: str
    replacements: int
    diff: str


class EditFileTool(Tool[EditFileArgs]):
    name: ClassVar[str] = "edit_file"
    description: ClassVar[str] = (
        "Replace an exact string in a workspace file. old_string must match exactly once "
        "(or set replace_all). Returns a unified diff of the change."
    )
    args_model = EditFileArgs
    effect: ClassVar[ToolEffect] = ToolEffect.WORKSPACE_EDIT
    retry_safe: ClassVar[bool] = False

    def plan(self, args: EditFileArgs, ctx: ToolContext) -> EditPlan:
        """Match old_string against the current file and compute the post-state."""
        target, shown = _target(ctx, args.path)
        raw, before = read_text(target, shown)
        old, new = args.old_string, args.new_string
        count = before.count(old)
        if count == 0 and "\r\n" in before and "\n" in old:
            # Models write "\n"; a CRLF file still deserves a match, kept CRLF.
            old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
            count = before.count(old)
        if count == 0:
            raise ToolError(
                "no_match",
                f"old_string was not found in {shown!r} (0 matches); read the file and copy "
                "the exact text, including whitespace and indentation",
                category="validation",
                details={"path": shown, "matches": 0},
            )
        if count > 1 and not args.replace_all:
            raise ToolError(
                "ambiguous_match",
                f"old_string occurs {count} times in {shown!r}; include more surrounding "
                "text to make it unique, or set replace_all=true",
                category="validation",
                details={"path": shown, "matches": count},
            )
        after = before.replace(old, new) if args.replace_all else before.replace(old, new, 1)
        try:
            _check_encoded_size(after, "the edited file")
        except ValueError as exc:
            raise ToolError("file_too_large", str(exc), category="validation") from None
        return EditPlan(
            target=target,
            shown=shown,
            before_sha256=sha256_bytes(raw),
            after=after,
            replacements=count if args.replace_all else 1,
            diff=unified_diff(shown, before, after),
        )

    def intent(self, args: EditFileArgs, ctx: ToolContext) -> dict[str, Any]:
        plan = self.plan(args, ctx)
        return {
            "tool": self.name,
            "path": plan.shown,
            "sha256": sha256_bytes(plan.after.encode("utf-8")),
            "existed_before": True,
            "previous_sha256": plan.before_sha256,
            "replacements": plan.replacements,
            "diff": plan.diff,
        }

    def is_applied(self, intent: dict[str, Any], ctx: ToolContext) -> bool:
        return _already_in_state(ctx, intent)

    def run(self, args: EditFileArgs, ctx: ToolContext) -> ToolResult:
        plan = self.plan(args, ctx)
        data = plan.after.encode("utf-8")
        _apply(plan.target, plan.shown, data)
        noun = "replacement" if plan.replacements == 1 else "replacements"
        return ToolResult(
            content=f"Edited {plan.shown} ({plan.replacements} {noun})\n{plan.diff}",
            data={
                "path": plan.shown,
                "sha256": sha256_bytes(data),
                "replacements": plan.replacements,
                "diff": plan.diff,
            },
        )
