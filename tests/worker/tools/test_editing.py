"""write_file and edit_file: atomic, size-capped, and applied exactly once."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from services.worker.tools.base import Tool, ToolContext, ToolError, ToolResult
from services.worker.tools.files.editing import MAX_WRITE_BYTES, EditFileTool, WriteFileTool

WRITE = WriteFileTool()
EDIT = EditFileTool()


def call(tool: Tool, ctx: ToolContext, **raw: Any) -> ToolResult:
    return tool.run(tool.parse(raw), ctx)


def run_step(
    tool: Tool, raw: dict[str, Any], ctx: ToolContext, ledger: dict[str, Any], *, crash: bool
) -> str:
    """The runtime's WORKSPACE_EDIT protocol (ARCHITECTURE.md, step ledger).

    First attempt: record the intent, apply, record the result. ``crash=True``
    stops after applying, before the result reaches the ledger. A resumed
    attempt finds the intent without a result and asks ``is_applied`` first.
    """
    args = tool.parse(raw)
    if "intent" in ledger:
        if tool.is_applied(ledger["intent"], ctx):
            ledger["result"] = "already applied"
            return "skipped"
    else:
        ledger["intent"] = tool.intent(args, ctx)
    content = tool.run(args, ctx).content
    if not crash:
        ledger["result"] = content
    return "ran"


class TestWriteFile:
    def test_creates_parents_and_reports(self, ctx: ToolContext) -> None:
        result = call(WRITE, ctx, path="report/sec/intro.md", content="# Intro\nText\n")
        assert (ctx.workspace / "report/sec/intro.md").read_text() == "# Intro\nText\n"
        assert result.content == "Created report/sec/intro.md (2 lines, 13 bytes)"
        assert result.data["created"] is True

    def test_overwrite_keeps_mode_and_gives_diff(self, ctx: ToolContext) -> None:
        script = ctx.workspace / "run.sh"
        script.write_text("echo one\n")
        script.chmod(0o755)
        result = call(WRITE, ctx, path="run.sh", content="echo two\n")
        assert script.read_text() == "echo two\n"
        assert script.stat().st_mode & 0o777 == 0o755
        assert result.content.startswith("Overwrote run.sh")
        assert "-echo one" in result.data["diff"] and "+echo two" in result.data["diff"]
        assert not [p for p in ctx.workspace.iterdir() if p.name.endswith(".tmp")]

    def test_intent_records_post_state(self, ctx: ToolContext) -> None:
        (ctx.workspace / "a.txt").write_text("old")
        intent = WRITE.intent(WRITE.parse({"path": "a.txt", "content": "new"}), ctx)
        assert intent["path"] == "a.txt"
        assert intent["sha256"] == hashlib.sha256(b"new").hexdigest()
        assert intent["existed_before"] is True
        assert intent["previous_sha256"] == hashlib.sha256(b"old").hexdigest()
        assert "-old" in intent["diff"] and "+new" in intent["diff"]
        assert (ctx.workspace / "a.txt").read_text() == "old"  # planning changes nothing

    def test_oversized_content_is_rejected_before_running(self, ctx: ToolContext) -> None:
        with pytest.raises(ToolError) as err:
            WRITE.parse({"path": "big.txt", "content": "x" * (MAX_WRITE_BYTES + 1)})
        assert err.value.code == "invalid_arguments"
        # multi-byte characters: under the character cap, over the byte cap
        with pytest.raises(ToolError) as err:
            WRITE.parse({"path": "big.txt", "content": "é" * (MAX_WRITE_BYTES // 2 + 1)})
        assert "bytes" in err.value.message
        assert not (ctx.workspace / "big.txt").exists()

    @pytest.mark.parametrize(
        "raw",
        [{"path": "a.txt"}, {"content": "x"}, {"path": "a.txt", "content": 7}, {"path": None}],
    )
    def test_invalid_arguments(self, raw: dict[str, Any]) -> None:
        with pytest.raises(ToolError) as err:
            WRITE.parse(raw)
        assert err.value.code == "invalid_arguments"

    def test_directory_and_file_parent_are_clear_errors(self, ctx: ToolContext) -> None:
        (ctx.workspace / "d").mkdir()
        with pytest.raises(ToolError) as err:
            call(WRITE, ctx, path="d", content="x")
        assert err.value.code == "is_directory"
        (ctx.workspace / "f").write_text("file")
        with pytest.raises(ToolError) as err:
            call(WRITE, ctx, path="f/child.txt", content="x")
        assert err.value.code == "write_failed"
        assert (ctx.workspace / "f").read_text() == "file"


class TestEditFile:
    def test_unique_replacement_returns_diff(self, ctx: ToolContext) -> None:
        (ctx.workspace / "m.py").write_text("a = 1\nb = 2\n")
        result = call(EDIT, ctx, path="m.py", old_string="b = 2", new_string="b = 3")
        assert (ctx.workspace / "m.py").read_text() == "a = 1\nb = 3\n"
        assert "--- a/m.py" in result.content
        assert "-b = 2" in result.content and "+b = 3" in result.content

    def test_zero_and_many_matches_name_the_count(self, ctx: ToolContext) -> None:
        (ctx.workspace / "t.txt").write_text("x\nx\nx\n")
        with pytest.raises(ToolError) as err:
            call(EDIT, ctx, path="t.txt", old_string="y", new_string="z")
        assert (err.value.code, err.value.details["matches"]) == ("no_match", 0)
        with pytest.raises(ToolError) as err:
            call(EDIT, ctx, path="t.txt", old_string="x", new_string="z")
        assert (err.value.code, err.value.details["matches"]) == ("ambiguous_match", 3)
        assert "3 times" in err.value.message
        assert (ctx.workspace / "t.txt").read_text() == "x\nx\nx\n"

    def test_replace_all(self, ctx: ToolContext) -> None:
        (ctx.workspace / "t.txt").write_text("x\nx\nx\n")
        result = call(EDIT, ctx, path="t.txt", old_string="x", new_string="z", replace_all=True)
        assert (ctx.workspace / "t.txt").read_text() == "z\nz\nz\n"
        assert result.data["replacements"] == 3

    def test_crlf_file_matches_lf_old_string(self, ctx: ToolContext) -> None:
        (ctx.workspace / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
        call(EDIT, ctx, path="w.txt", old_string="one\ntwo", new_string="1\n2")
        assert (ctx.workspace / "w.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"

    def test_refuses_missing_binary_and_identical(self, ctx: ToolContext) -> None:
        with pytest.raises(ToolError) as err:
            call(EDIT, ctx, path="none.txt", old_string="a", new_string="b")
        assert err.value.code == "file_not_found"
        (ctx.workspace / "b.bin").write_bytes(b"a\x00b")
        with pytest.raises(ToolError) as err:
            call(EDIT, ctx, path="b.bin", old_string="a", new_string="b")
        assert err.value.code == "binary_file"
        with pytest.raises(ToolError) as err:
            EDIT.parse({"path": "x", "old_string": "same", "new_string": "same"})
        assert "identical" in err.value.message
        with pytest.raises(ToolError):
            EDIT.parse({"path": "x", "old_string": "", "new_string": "b"})

    @pytest.mark.parametrize(
        "raw",
        [
            {"path": "a.txt"},
            {"path": "a.txt", "old_string": 1, "new_string": "b"},
            {"path": "a.txt", "old_string": "a", "new_string": "b", "replace_all": "maybe"},
            {"path": "a.txt", "old_string": "a", "new_string": "x" * (MAX_WRITE_BYTES + 1)},
        ],
    )
    def test_invalid_arguments(self, raw: dict[str, Any]) -> None:
        with pytest.raises(ToolError) as err:
            EDIT.parse(raw)
        assert err.value.code == "invalid_arguments"


class TestExactlyOnce:
    def test_edit_crash_after_apply_is_not_reapplied(self, ctx: ToolContext) -> None:
        target = ctx.workspace / "cfg.py"
        target.write_text("a = 1\n")
        raw = {"path": "cfg.py", "old_string": "a = 1", "new_string": "a = 1\nb = 2"}
        ledger: dict[str, Any] = {}
        assert run_step(EDIT, raw, ctx, ledger, crash=True) == "ran"
        assert "result" not in ledger
        assert EDIT.is_applied(ledger["intent"], ctx) is True
        # Resume: the caller sees the post-state and skips; without the check the
        # edit would match "a = 1" again and add a second "b = 2".
        assert run_step(EDIT, raw, ctx, ledger, crash=False) == "skipped"
        assert target.read_text() == "a = 1\nb = 2\n"

    def test_crash_before_apply_runs_once_on_resume(self, ctx: ToolContext) -> None:
        target = ctx.workspace / "cfg.py"
        target.write_text("a = 1\n")
        raw = {"path": "cfg.py", "old_string": "a = 1", "new_string": "a = 2"}
        ledger = {"intent": EDIT.intent(EDIT.parse(raw), ctx)}  # crash right after recording
        assert EDIT.is_applied(ledger["intent"], ctx) is False
        assert run_step(EDIT, raw, ctx, ledger, crash=False) == "ran"
        assert target.read_text() == "a = 2\n"

    def test_write_file_is_applied_tracks_content(self, ctx: ToolContext) -> None:
        raw = {"path": "out/data.csv", "content": "a,b\n1,2\n"}
        ledger: dict[str, Any] = {}
        run_step(WRITE, raw, ctx, ledger, crash=True)
        assert ledger["intent"]["existed_before"] is False
        assert run_step(WRITE, raw, ctx, ledger, crash=False) == "skipped"
        # Someone changed the file since: no longer in the recorded post-state.
        Path(ctx.workspace / "out/data.csv").write_text("changed\n")
        assert WRITE.is_applied(ledger["intent"], ctx) is False

    def test_is_applied_is_false_for_a_path_that_became_hostile(self, ctx: ToolContext) -> None:
        intent = {"path": "../escape.txt", "sha256": "0" * 64}
        assert WRITE.is_applied(intent, ctx) is False
