"""Which workspace paths are protected: suffixes and glob patterns, case-insensitive.

Two settings, both matched against the path relative to the workspace:

- ``LEAFLAB_APPROVAL_PROTECTED_SUFFIXES`` (``.tex``, ``.py`` …): the path ends so.
- ``LEAFLAB_APPROVAL_PROTECTED_PATHS``: glob patterns. A pattern without ``/``
  matches the file's name in any directory (``Makefile``, ``*.mk``,
  ``requirements*.txt``); one with ``/`` matches the whole relative path from
  the workspace root, where ``**`` spans any number of directories
  (``.github/**``, ``**/.git/hooks/**``); a leading ``/`` anchors a name at the
  root (``/Makefile``) and a trailing ``/`` means everything under a directory.
  ``*`` and ``?`` never cross a ``/``.

Case never matters: ``Paper.JL`` is as protected as ``paper.jl`` (a model, or a
case-insensitive filesystem, must not get around the rule by changing case).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from services.common.globs import glob_source

# Build files, packaging and test hooks, CI and git hooks, shell start-up files
# and code in the lab's other languages: a change to any of them runs code later
# (make, pip install, pytest, CI, git, a login shell, R/Julia/Node).
DEFAULT_PROTECTED_PATHS: tuple[str, ...] = (
    # build
    "Makefile",
    "GNUmakefile",
    "*.mk",
    "CMakeLists.txt",
    "*.cmake",
    "meson.build",
    "justfile",
    "Dockerfile",
    # Python packaging and test hooks (imported or executed by pip/pytest/site)
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "conftest.py",
    "pytest.ini",
    "tox.ini",
    "noxfile.py",
    "*.pth",
    "sitecustomize.py",
    "usercustomize.py",
    "requirements*.txt",
    "constraints*.txt",
    "Pipfile",
    "Pipfile.lock",
    "poetry.lock",
    "uv.lock",
    # CI, git and editor hooks
    ".github/**",
    ".gitlab-ci.yml",
    ".pre-commit-config.yaml",
    ".gitmodules",
    "**/.git/hooks/**",
    "**/.git/config",
    ".vscode/**",
    ".devcontainer/**",
    ".envrc",
    # shell start-up files
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".profile",
    ".zshrc",
    ".zprofile",
    "*.bash",
    "*.zsh",
    # R, Julia, JavaScript/TypeScript
    "*.R",
    "*.Rmd",
    "*.qmd",
    ".Rprofile",
    "*.jl",
    "Project.toml",
    "Manifest.toml",
    "*.js",
    "*.mjs",
    "*.cjs",
    "*.ts",
    "package.json",
    ".npmrc",
)


@dataclass(frozen=True)
class ProtectedPaths:
    """The compiled rule; build once per settings object with :meth:`of`."""

    suffixes: tuple[str, ...]
    by_name: re.Pattern[str] | None
    by_path: re.Pattern[str] | None

    @classmethod
    def of(cls, suffixes: Iterable[str], patterns: Iterable[str]) -> ProtectedPaths:
        # Every turn's approval gate asks for its rule (the settings' or its project's
        # lists): compiling the globs each time was ~4 % of a worker's CPU per step.
        return _compiled(tuple(suffixes), tuple(patterns))

    @classmethod
    def _compile(cls, suffixes: tuple[str, ...], patterns: tuple[str, ...]) -> ProtectedPaths:
        names: list[str] = []
        paths: list[str] = []
        for raw in patterns:
            pattern = raw.strip()
            if pattern.endswith("/"):  # a directory: everything under it
                pattern += "**"
            anchored = pattern.startswith("/")  # "/Makefile": the root one only
            pattern = pattern.lstrip("/")
            if not pattern:
                continue
            target = paths if anchored or "/" in pattern else names
            target.append(glob_source(pattern))

        def compiled(parts: list[str]) -> re.Pattern[str] | None:
            if not parts:
                return None
            return re.compile("(?:" + "|".join(parts) + r")\Z", re.IGNORECASE | re.DOTALL)

        return cls(
            suffixes=tuple(s.lower() for s in suffixes if s),
            by_name=compiled(names),
            by_path=compiled(paths),
        )

    def match(self, path: str) -> bool:
        """Whether ``path`` (relative to the workspace, ``/``-separated) is protected."""
        path = path.replace("\\", "/").lstrip("/")
        while path.startswith("./"):
            path = path[2:]
        if not path or path == ".":
            return False
        lowered = path.lower()
        if any(lowered.endswith(s) for s in self.suffixes):
            return True
        name = path.rsplit("/", 1)[-1]
        if self.by_name is not None and self.by_name.match(name):
            return True
        return self.by_path is not None and self.by_path.match(path) is not None


@lru_cache(maxsize=256)
def _compiled(suffixes: tuple[str, ...], patterns: tuple[str, ...]) -> ProtectedPaths:
    """One compiled rule per distinct list (immutable, so shared across threads)."""
    return ProtectedPaths._compile(suffixes, patterns)
