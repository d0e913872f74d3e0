"""A scratch copy of the working tree for one mutation, so the tree itself is never edited.

Each mutation is applied to its own copy (the files git tracks or would track,
a few MB; ``.venv`` is linked, not copied) and its tests run there with
``PYTHONPATH`` pointing at the copy. An interrupted or killed run therefore can
never leave a mutated file in the working tree, and mutations can run side by
side. The mutated file also gets a marker line, so a scratch file copied back
by hand is recognised (``leftover_markers``) and the run refuses to start.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from tests.mutations.catalog import Mutation

# Built in two parts so this file itself never carries the marker.
MARKER = "LEAFLAB-" + "MUTATION-APPLIED"
LINKED = (".venv",)
# The marker line in each kind of file's own comment syntax: a "#" line appended to a
# script would be a syntax error, so the page broke whole and every mutation of it
# was "killed" by that, whatever the mutation did.
COMMENT_FORMS = {
    ".js": "/* {} */",
    ".mjs": "/* {} */",
    ".css": "/* {} */",
    ".html": "<!-- {} -->",
    ".md": "<!-- {} -->",
    ".sql": "-- {}",
}


def marker_line(path: Path) -> str:
    """The marker as a comment of ``path``'s language ("#" for Python, shell, YAML, TOML)."""
    return COMMENT_FORMS.get(path.suffix, "# {}").format(MARKER)


class Stale(Exception):
    """The mutation's text no longer occurs exactly once: the catalog needs updating."""


def tree_files(root: Path) -> list[str]:
    """Tracked and untracked-but-not-ignored files: what the tests could import or read."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [name for name in listed.split("\0") if name and (root / name).is_file()]


def check_applies(root: Path, mutation: Mutation) -> None:
    """Raise :class:`Stale` unless ``old`` occurs exactly once in the mutation's file."""
    path = root / mutation.path
    if not path.is_file():
        raise Stale(f"{mutation.path} does not exist")
    count = path.read_text().count(mutation.old)
    if count != 1:
        raise Stale(f"its text occurs {count} times in {mutation.path} (must be once)")


def shared_data(root: Path) -> Path | None:
    """The ``shared/`` folder beside the checkout or a folder above it (worktrees), where
    the tests find their PDFs; the copy gets a link to it at the same relative place."""
    for folder in root.parents:
        if (folder / "shared" / "data").is_dir():
            return folder / "shared"
    return None


def make_copy(root: Path, files: list[str], mutation: Mutation) -> Path:
    """A fresh copy of the tree with ``mutation`` applied and marked, as
    ``<scratch>/tree`` beside a link ``<scratch>/shared``; the caller removes ``<scratch>``
    (``scratch_of``)."""
    if mutation.path:  # the control run (no path) copies the tree unchanged
        check_applies(root, mutation)
    scratch = Path(tempfile.mkdtemp(prefix="leaflab-mutation-"))
    shared = shared_data(root)
    if shared is not None:
        (scratch / "shared").symlink_to(shared)
    tree = scratch / "tree"
    try:
        for name in files:
            target = tree / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / name, target)
        for name in LINKED:
            if (root / name).exists():
                (tree / name).symlink_to((root / name).resolve())
        if mutation.path:
            path = tree / mutation.path
            text = path.read_text()
            # Appended, not inserted: line numbers in tracebacks stay those of the real file.
            path.write_text(text.replace(mutation.old, mutation.new) + f"\n{marker_line(path)}\n")
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return tree


def scratch_of(tree: Path) -> Path:
    """The folder ``make_copy`` made around ``tree``: what to remove."""
    return tree.parent


def leftover_markers(root: Path, files: list[str]) -> list[str]:
    """Files of the working tree that carry a mutation's marker (copied back by hand)."""
    found = []
    for name in files:
        if not name.endswith(".py"):
            continue
        try:
            if MARKER in (root / name).read_text(errors="replace"):
                found.append(name)
        except OSError:
            continue
    return found
