"""The protected-path rule and the stash that holds a sandbox call's changes.

Fast, no processes: the matcher on the documented defaults, and the stash on
a real directory (copies, compares, puts back, re-applies). The end-to-end
guarantees (a held bash call, approve, reject) are in
``tests/sandbox/test_protected_exec.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from services.worker.approvals.protected import DEFAULT_PROTECTED_PATHS, ProtectedPaths
from services.worker.approvals.snapshot import Stash, TooMuchToHold, scan
from services.worker.settings import WorkerSettings

DEFAULTS = ProtectedPaths.of(
    WorkerSettings().approval_protected_suffixes, WorkerSettings().approval_protected_paths
)


@pytest.mark.parametrize(
    "path",
    [
        "Makefile",
        "src/makefile",
        "GNUmakefile",
        "rules.MK",
        "pkg/evil.pth",
        "pyproject.toml",
        "setup.cfg",
        "setup.py",
        "tests/conftest.py",
        "tox.ini",
        "noxfile.py",
        ".github/workflows/x.yml",
        ".gitlab-ci.yml",
        ".pre-commit-config.yaml",
        ".git/hooks/pre-commit",
        "vendor/lib/.git/hooks/post-checkout",
        ".git/config",
        "analysis.R",
        "Paper.JL",
        "plot.js",
        "app.TS",
        ".bashrc",
        ".profile",
        "requirements.txt",
        "requirements-dev.txt",
        "paper.tex",
    ],
)
def test_build_hook_and_code_files_are_protected(path: str) -> None:
    assert DEFAULTS.match(path), path


@pytest.mark.parametrize(
    "path",
    [
        "notes.md",
        "data/run1.csv",
        "figure.png",
        "results.json",
        ".git/objects/ab/cd",
        "a/.github/x",
    ],
)
def test_data_and_notes_are_not(path: str) -> None:
    assert not DEFAULTS.match(path), path


def test_patterns_anchor_and_directories() -> None:
    rule = ProtectedPaths.of([], ["/Makefile", "build/", "docs/*.cfg"])
    assert rule.match("Makefile") and not rule.match("sub/Makefile")
    assert rule.match("build/a/b.o") and not rule.match("xbuild/a")
    assert rule.match("docs/x.cfg") and not rule.match("docs/sub/x.cfg")
    assert "Makefile" in DEFAULT_PROTECTED_PATHS  # the README documents this list


def _stash(tmp_path: Path) -> tuple[Path, Stash]:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws, Stash(tmp_path / "held" / "step", ws)


def test_a_changed_created_and_deleted_file_are_put_back_and_can_be_reapplied(
    tmp_path: Path,
) -> None:
    ws, stash = _stash(tmp_path)
    (ws / "Makefile").write_text("all:\n\ttrue\n")
    (ws / "conftest.py").write_text("import os\n")
    (ws / "notes.md").write_text("free\n")
    mtime = os.stat(ws / "Makefile").st_mtime_ns
    stash.take(scan(ws, DEFAULTS, max_entries=1000), max_files=10, max_bytes=10_000)

    # What a bash call does: append, delete, create (in a new directory), free edits.
    with (ws / "Makefile").open("a") as fh:
        fh.write("x\n")
    (ws / "conftest.py").unlink()
    (ws / ".github" / "workflows").mkdir(parents=True)
    (ws / ".github" / "workflows" / "x.yml").write_text("on: push\n")
    (ws / "notes.md").write_text("changed freely\n")

    changes = stash.compare(scan(ws, DEFAULTS, max_entries=1000), max_bytes=10_000)
    by_path = {c.path: c for c in changes}
    assert set(by_path) == {"Makefile", "conftest.py", ".github/workflows/x.yml"}
    assert by_path["Makefile"].change == "modified" and "+x" in by_path["Makefile"].diff
    assert by_path["conftest.py"].change == "deleted"
    assert by_path[".github/workflows/x.yml"].change == "created"
    assert stash.restore(list(by_path)) == []
    assert (ws / "Makefile").read_text() == "all:\n\ttrue\n"
    assert os.stat(ws / "Makefile").st_mtime_ns == mtime
    assert (ws / "conftest.py").read_text() == "import os\n"
    assert not (ws / ".github" / "workflows" / "x.yml").exists()
    assert (ws / "notes.md").read_text() == "changed freely\n"  # never held

    for path, new, held, blob in stash.changes():
        assert held
        stash.put(path, new, blob)
    assert (ws / "Makefile").read_text() == "all:\n\ttrue\nx\n"
    assert not (ws / "conftest.py").exists()
    assert (ws / ".github" / "workflows" / "x.yml").read_text() == "on: push\n"


def test_a_touch_or_same_bytes_is_no_change(tmp_path: Path) -> None:
    ws, stash = _stash(tmp_path)
    (ws / "Makefile").write_text("all:\n")
    stash.take(scan(ws, DEFAULTS, max_entries=1000), max_files=10, max_bytes=10_000)
    os.utime(ws / "Makefile", ns=(1, 1))
    (ws / "Makefile").write_text("all:\n")
    assert stash.compare(scan(ws, DEFAULTS, max_entries=1000), max_bytes=10_000) == []


def test_a_symlink_planted_over_a_parent_is_not_followed(tmp_path: Path) -> None:
    ws, stash = _stash(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "sub").mkdir()
    (ws / "sub" / "Makefile").write_text("all:\n")
    stash.take(scan(ws, DEFAULTS, max_entries=1000), max_files=10, max_bytes=10_000)
    (ws / "sub" / "Makefile").unlink()
    (ws / "sub").rmdir()
    (ws / "sub").symlink_to(outside)
    changes = stash.compare(scan(ws, DEFAULTS, max_entries=1000), max_bytes=10_000)
    assert [c.path for c in changes] == ["sub/Makefile"]
    assert stash.restore(["sub/Makefile"]) == ["sub/Makefile"]  # refused, not written
    assert list(outside.iterdir()) == []


def test_bounds_refuse_instead_of_walking_or_copying_everything(tmp_path: Path) -> None:
    ws, stash = _stash(tmp_path)
    for n in range(5):
        (ws / f"m{n}.mk").write_text("x" * 100)
    with pytest.raises(TooMuchToHold):
        scan(ws, DEFAULTS, max_entries=3)
    with pytest.raises(TooMuchToHold):
        stash.take(scan(ws, DEFAULTS, max_entries=100), max_files=4, max_bytes=10_000)
    with pytest.raises(TooMuchToHold):
        stash.take(scan(ws, DEFAULTS, max_entries=100), max_files=10, max_bytes=400)


def test_the_compiled_rule_is_shared_by_equal_lists() -> None:
    # Each turn asks for its rule: equal lists give the one compiled rule, and a
    # different list its own.
    a = ProtectedPaths.of([".tex"], ["Makefile", "docs/"])
    assert ProtectedPaths.of([".tex"], ["Makefile", "docs/"]) is a
    b = ProtectedPaths.of([".tex"], ["Makefile"])
    assert b is not a and a.match("docs/x.md") and not b.match("docs/x.md")
