"""One walk of a workspace answers what the disk caps and the artifact scan each used
to walk for: the same total, the same per-file sizes, the same artifact snapshot."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from services.common.workspace_usage import directory_bytes
from services.sandbox import workspace_scan
from services.sandbox.quota import file_sizes
from services.sandbox.workspace_scan import SKIP_DIRS, scan


def build_tree(root: Path) -> None:
    (root / "a" / "b").mkdir(parents=True)
    (root / "top.txt").write_bytes(b"x" * 10)
    (root / "a" / "mid.csv").write_bytes(b"y" * 200)
    (root / "a" / "b" / "deep.png").write_bytes(b"z" * 3000)
    (root / ".cache" / "pip").mkdir(parents=True)
    (root / ".cache" / "pip" / "wheel.bin").write_bytes(b"w" * 500)
    (root / "a" / "__pycache__").mkdir()
    (root / "a" / "__pycache__" / "m.pyc").write_bytes(b"c" * 40)
    os.symlink("/etc/passwd", root / "passwd-link")
    os.symlink("/etc", root / "etc-link")
    os.mkfifo(root / "a" / "pipe")


def walk_snapshot(root: Path, limit: int) -> list[str]:
    """The artifact snapshot as os.walk with pruned helper directories gives it."""
    names: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
        for name in filenames:
            path = os.path.join(dirpath, name)
            if os.path.isfile(path) and not os.path.islink(path):
                names.append(os.path.relpath(path, root))
    return names[:limit]


class TestOneWalk:
    def test_total_and_sizes_match_the_separate_measures(self, tmp_path: Path) -> None:
        build_tree(tmp_path)
        found = scan(tmp_path)
        assert found.total == directory_bytes(tmp_path) == 10 + 200 + 3000 + 500 + 40
        assert found.sizes == file_sizes(tmp_path)

    def test_artifacts_leave_out_helper_directories_and_links(self, tmp_path: Path) -> None:
        build_tree(tmp_path)
        found = scan(tmp_path)
        assert sorted(found.artifacts) == ["a/b/deep.png", "a/mid.csv", "top.txt"]
        assert found.artifacts["a/mid.csv"][2] == 200
        st = (tmp_path / "top.txt").stat()
        assert found.artifacts["top.txt"] == (st.st_dev, st.st_ino, 10, st.st_mtime_ns)

    def test_the_artifact_cap_keeps_the_first_files_in_walk_order(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        build_tree(tmp_path)
        for i in range(5):
            (tmp_path / "a" / f"n{i}.txt").write_text("n")
        monkeypatch.setattr(workspace_scan, "MAX_SCAN_ENTRIES", 4)
        found = scan(tmp_path)
        assert sorted(found.artifacts) == sorted(walk_snapshot(tmp_path, 4))
        assert len(found.files) == 3 + 2 + 5  # the caps still count every file

    def test_a_missing_workspace_is_empty(self, tmp_path: Path) -> None:
        found = scan(tmp_path / "never-made")
        assert (found.files, found.artifacts, found.total) == ({}, {}, 0)


class TestGrown:
    def test_only_a_new_or_larger_file_counts_as_grown(self, tmp_path: Path) -> None:
        build_tree(tmp_path)
        before = scan(tmp_path)
        (tmp_path / "top.txt").write_bytes(b"q" * 10)  # rewritten in place, same size
        (tmp_path / "a" / "mid.csv").write_bytes(b"y" * 20)  # cut down
        (tmp_path / "a" / "b" / "deep.png").unlink()
        assert not workspace_scan.grown(before, scan(tmp_path))
        (tmp_path / "a" / "mid.csv").write_bytes(b"y" * 201)
        assert workspace_scan.grown(before, scan(tmp_path))

    def test_a_new_file_counts_as_grown_even_when_the_total_shrank(self, tmp_path: Path) -> None:
        build_tree(tmp_path)
        before = scan(tmp_path)
        (tmp_path / "a" / "b" / "deep.png").unlink()
        (tmp_path / "new.bin").write_bytes(b"n")
        after = scan(tmp_path)
        assert after.total < before.total
        assert workspace_scan.grown(before, after)
