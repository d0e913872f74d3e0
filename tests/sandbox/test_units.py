"""Small pure parts: output capping, command refusal, recipe hashing, artifacts scan."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from services.sandbox.artifacts import collect, snapshot
from services.sandbox.image import recipe_hash
from services.sandbox.output import BoundedOutput
from services.sandbox.policy import refusal_reason
from services.sandbox.settings import SandboxSettings


class TestBoundedOutput:
    def test_keeps_head_and_tail_of_a_huge_stream(self) -> None:
        out = BoundedOutput(cap=100)
        out.feed(b"HEAD" + b"x" * 10_000)
        for _ in range(1000):
            out.feed(b"y" * 1000)
        out.feed(b"TAIL")
        text = out.text()
        assert out.total == 4 + 10_000 + 1_000_000 + 4
        assert text.startswith("HEAD") and text.endswith("TAIL")
        assert out.truncated and len(text) < 200

    def test_small_output_is_untouched(self) -> None:
        out = BoundedOutput(cap=100)
        out.feed(b"hello ")
        out.feed(b"world")
        assert out.text() == "hello world" and not out.truncated


class TestRefusal:
    @pytest.mark.parametrize(
        "command",
        [
            "rm -rf /",
            "rm -fr /*",
            "sudo rm -rf --no-preserve-root /",
            ":(){ :|:& };:",
            "mkfs.ext4 /dev/sda1",
            "dd if=/dev/zero of=/dev/sda bs=1M",
            "echo x > /dev/nvme0n1",
            "cd /tmp && rm -rf ~",
        ],
    )
    def test_refuses(self, command: str) -> None:
        assert refusal_reason(command) is not None

    @pytest.mark.parametrize(
        "command",
        [
            "rm -rf build/",
            "rm -rf /tmp/work",
            "ls -la /",
            "dd if=/dev/zero of=/dev/null count=1",
            "python3 sim.py > out.txt",
            "grep -r mkfsx .",
        ],
    )
    def test_allows(self, command: str) -> None:
        assert refusal_reason(command) is None


class TestRecipe:
    def test_hash_changes_with_the_recipe(self, tmp_path: Path) -> None:
        from services.sandbox.image import RECIPE_FILES, recipe_dir

        for name in RECIPE_FILES:
            (tmp_path / name).write_bytes((recipe_dir() / name).read_bytes())
        assert recipe_hash(tmp_path) == recipe_hash()
        with (tmp_path / "pip-requirements.txt").open("a") as f:
            f.write("sympy\n")
        assert recipe_hash(tmp_path) != recipe_hash()

    def test_settings_refuse_timeouts_beyond_the_task_limit(self) -> None:
        with pytest.raises(ValueError, match="sandbox_timeout_max_s"):
            SandboxSettings(sandbox_timeout_max_s=500)


class TestArtifactScan:
    def test_symlinks_are_not_followed(self, tmp_path: Path) -> None:
        ws = tmp_path / "ws"
        ws.mkdir()
        before = snapshot(ws)
        (ws / "plot.png").write_bytes(b"\x89PNG data")
        os.symlink("/etc/passwd", ws / "passwd-link")
        os.symlink("/etc", ws / "etc-link")
        found, skipped = collect(ws, before, max_bytes=1000, max_count=10)
        assert [f.name for f in found] == ["plot.png"]
        assert found[0].mime == "image/png"
        assert skipped == []

    def test_caps_size_and_count(self, tmp_path: Path) -> None:
        before = snapshot(tmp_path)
        (tmp_path / "big.bin").write_bytes(b"0" * 2000)
        for i in range(3):
            (tmp_path / f"s{i}.txt").write_text("x")
        found, skipped = collect(tmp_path, before, max_bytes=1000, max_count=2)
        assert len(found) == 2
        reasons = {s["name"]: s["reason"] for s in skipped}
        assert reasons["big.bin"] == "too large"
        assert "too many artifacts" in reasons.values()
