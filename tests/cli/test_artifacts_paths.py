"""`leaflab artifacts --out`: an artifact's name never writes outside the chosen folder."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from services.cli.artifacts_cmd import local_path


def test_plain_names_land_under_the_folder(tmp_path: Path) -> None:
    assert local_path(tmp_path, "report.md") == tmp_path / "report.md"
    assert local_path(tmp_path, "plots/fig 1.png") == tmp_path / "plots" / "fig 1.png"


@pytest.mark.parametrize("name", ["../escape.txt", "plots/../../x", "/etc/passwd", ""])
def test_names_that_would_leave_the_folder_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(click.ClickException, match="refusing artifact name"):
        local_path(tmp_path, name)
