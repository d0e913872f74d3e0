"""The documentation holds together: the site builds, links resolve, commands exist.

- ``mkdocs build --strict`` succeeds (strict turns a broken link or anchor between
  docs pages, or a page missing from the nav, into a failure);
- every relative link in README.md and docs/*.md points at a file that exists
  (the README is not part of the site, so mkdocs does not check it);
- every ``leaflab …`` command shown (in a code block or an inline code span)
  names a real command: each
  lower-case word after ``leaflab`` is looked up in the click tree for as long as
  it names a group, so ``leaflab admin user invite`` checks ``admin``, ``user``
  and ``invite``, while ``leaflab serve ROLE`` stops at the command ``serve``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import click
import pytest

from services.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^```.*?$(.*?)^```", re.S | re.M)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
# `leaflab` as a command word: at the start of a line or after a space, pipe, `;`,
# `(` or a path (`.venv/bin/leaflab`), never inside a name (`~/.leaflab`).
COMMAND = re.compile(r"(?:^|[\s|;(`])(?:[\w.~-]*/)*leaflab((?:[ \t]+[^\s|;#]+)*)")
INLINE = re.compile(r"`([^`]+)`")
WORD = re.compile(r"[a-z][a-z0-9-]*")


def _code_blocks(text: str) -> list[str]:
    return FENCE.findall(text)


def _prose(text: str) -> str:
    return FENCE.sub("", text)


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_site_builds_strict(tmp_path: Path) -> None:
    # Never `-q`: mkdocs then drops the warnings strict mode counts, and exits 0.
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict",
         "-f", str(ROOT / "mkdocs.yml"), "-d", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    assert (tmp_path / "site" / "index.html").is_file()


def broken_links(page: Path) -> list[str]:
    """The relative links of one page whose target file does not exist."""
    broken = []
    for target in LINK.findall(_prose(page.read_text())):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL (http:, mailto:) or an anchor of the page itself
        path = target.split("#", 1)[0]
        if not (page.parent / path).exists():
            broken.append(f"{_rel(page)}: ({target})")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_relative_links_resolve(page: Path) -> None:
    assert broken_links(page) == []


def shown_snippets(text: str) -> list[str]:
    """Each code block line and each inline code span of a page (spans may wrap)."""
    lines = [line for block in _code_blocks(text) for line in block.splitlines()]
    return lines + INLINE.findall(_prose(text).replace("\n", " "))


def unknown_commands(page: Path) -> list[str]:
    """Snippets of the page that show a `leaflab` command that does not exist."""
    unknown = []
    for snippet in shown_snippets(page.read_text()):
        for match in COMMAND.finditer(snippet):
            problem = _check_words(match.group(1).split())
            if problem:
                unknown.append(f"{_rel(page)}: {problem} in: {snippet.strip()}")
    return unknown


def _check_words(words: list[str]) -> str | None:
    """None if the words name a real command path, else what is wrong."""
    command: click.Command = cli
    ctx = click.Context(cli, info_name="leaflab")
    path = ["leaflab"]
    for word in words:
        if not isinstance(command, click.Group) or not WORD.fullmatch(word):
            return None  # past the commands: an argument, an option or a placeholder
        sub = command.get_command(ctx, word)
        if sub is None:
            return f"no command `{' '.join([*path, word])}`"
        path.append(word)
        command, ctx = sub, click.Context(sub, parent=ctx, info_name=word)
    if isinstance(command, click.Group) and command is not cli:
        return f"`{' '.join(path)}` is a group, not a command"
    return None


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_shown_commands_exist(page: Path) -> None:
    assert unknown_commands(page) == []


def test_command_check_sees_commands() -> None:
    """The checker reads what the pages show: it finds commands, and refuses a wrong one."""
    readme = ROOT / "README.md"
    shown = [m for b in _code_blocks(readme.read_text()) for m in COMMAND.finditer(b)]
    assert len(shown) > 20
    assert _check_words(["admin", "user", "invite", "EMAIL"]) is None
    assert _check_words(["admin", "usr", "invite"]) == "no command `leaflab admin usr`"
    assert _check_words(["library"]) == "`leaflab library` is a group, not a command"
