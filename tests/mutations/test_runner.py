"""The mutation run itself: it never edits the working tree, refuses stale mutations
and marked trees, and an interrupted run leaves no copy and no test process behind."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.mutations.catalog import MUTATIONS, Mutation
from tests.mutations.scratch import (
    MARKER,
    Stale,
    leftover_markers,
    make_copy,
    marker_line,
    scratch_of,
    tree_files,
)

ROOT = Path(__file__).resolve().parents[2]
GUARD = Mutation("toy", "pkg/guard.py", "    return allowed\n", "    return True\n", ("x",))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "guard.py").write_text("def check(allowed):\n    return allowed\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "."], check=True)
    return root


def test_the_copy_is_mutated_and_marked_and_the_tree_is_untouched(tree: Path) -> None:
    original = (tree / "pkg" / "guard.py").read_text()
    scratch = make_copy(tree, tree_files(tree), GUARD)
    try:
        mutated = (scratch / "pkg" / "guard.py").read_text()
        assert "    return True\n" in mutated and MARKER in mutated
        assert (tree / "pkg" / "guard.py").read_text() == original
        assert leftover_markers(tree, tree_files(tree)) == []
        # A scratch file copied back by hand is recognised.
        (tree / "pkg" / "guard.py").write_text(mutated)
        assert leftover_markers(tree, tree_files(tree)) == ["pkg/guard.py"]
    finally:
        subprocess.run(["rm", "-rf", str(scratch_of(scratch))], check=True)


def test_a_mutation_that_no_longer_matches_is_stale(tree: Path) -> None:
    (tree / "pkg" / "guard.py").write_text("def check(allowed):\n    return bool(allowed)\n")
    with pytest.raises(Stale, match="occurs 0 times in pkg/guard.py"):
        make_copy(tree, tree_files(tree), GUARD)


def test_every_catalog_mutation_matches_the_code() -> None:
    for mutation in MUTATIONS:
        count = (ROOT / mutation.path).read_text().count(mutation.old)
        assert count == 1, f"{mutation.name}: its text occurs {count} times in {mutation.path}"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupted_run_leaves_no_copy_and_no_test_process(tmp_path: Path, signum: int) -> None:
    scratch_parent = tmp_path / "tmp"
    scratch_parent.mkdir()
    before = {m.path: (ROOT / m.path).read_bytes() for m in MUTATIONS}
    run = subprocess.Popen(
        [sys.executable, "-m", "tests.mutations.run", "-k", "stale lease's step", "--jobs", "1"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(scratch_parent)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not list(scratch_parent.glob("leaflab-mutation-*/tree/.venv")):
        assert time.monotonic() < deadline, "the run never made its copy"
        time.sleep(0.1)
    time.sleep(2)  # its pytest is starting inside the copy
    run.send_signal(signum)
    out, _ = run.communicate(timeout=60)

    assert run.returncode != 0, out
    assert "interrupted; test processes stopped, scratch copies removed" in out
    assert list(scratch_parent.glob("leaflab-mutation-*")) == []
    assert {m.path: (ROOT / m.path).read_bytes() for m in MUTATIONS} == before
    assert _running_in(scratch_parent) == [], "test processes left running in the copy"


def _running_in(directory: Path) -> list[str]:
    """Processes whose working directory is under ``directory``."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cwd = os.readlink(proc / "cwd")
        except OSError:
            continue
        if cwd.startswith(str(directory)):
            found.append(f"{proc.name}: {(proc / 'cmdline').read_bytes()[:200]!r}")
    return found


@pytest.mark.parametrize(
    "mutation",
    [m for m in MUTATIONS if m.path.endswith((".py", ".js"))],
    ids=lambda m: m.name,
)
def test_every_mutated_file_still_parses(mutation: Mutation, tmp_path: Path) -> None:
    """A mutation must change behaviour, not break the file: a copy that no longer
    parses (a Python syntax error, a script the browser refuses) fails its tests for
    that reason alone, whatever the mutation was meant to prove. The marker line
    counts too (a "#" line once broke every script mutation)."""
    path = ROOT / mutation.path
    source = path.read_text()
    mutated = source.replace(mutation.old, mutation.new) + f"\n{marker_line(path)}\n"
    if mutation.path.endswith(".py"):
        compile(mutated, mutation.path, "exec")
        return
    if shutil.which("node") is None:
        pytest.skip("node is not installed: the scripts cannot be parsed here")
    script = tmp_path / Path(mutation.path).name
    script.write_text(mutated)
    # Parsed as a module when the page loads it as one (import/export), else as a script.
    if "import " in source or "export " in source:
        script = script.rename(script.with_suffix(".mjs"))
    checked = subprocess.run(["node", "--check", str(script)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
