"""``leaflab artifacts JOB [--out DIR]``: what a job made, and a copy of it on this machine."""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

import click

from services.cli.client import LeaflabClient
from services.cli.term.literal import literal
from services.cli.term.output import json_option, print_json
from services.cli.term.tables import Column, print_table

COLUMNS = [
    Column("NAME", flex=2),
    Column("SIZE", justify="right"),
    Column("TYPE"),
    Column("URL", flex=2, drop=1),
]


def job_artifacts(client: LeaflabClient, job_id: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = client.request("GET", f"/v1/jobs/{job_id}/artifacts")["items"]
    return items


def local_path(out: Path, name: str) -> Path:
    """Where artifact ``name`` (a workspace path) lands under ``out``; a name that would
    leave ``out`` (absolute, ``..``) is refused, never written outside it."""
    parts = PurePosixPath(name).parts
    if not parts or PurePosixPath(name).is_absolute() or ".." in parts:
        raise click.ClickException(f"refusing artifact name {literal(name)}: not a plain path")
    return out.joinpath(*parts)


def download(client: LeaflabClient, items: list[dict[str, Any]], out: Path) -> list[Path]:
    saved = []
    for item in items:
        target = local_path(out, str(item["name"]))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(client.content(str(item["url"])))
        saved.append(target)
    return saved


@click.command()
@click.argument("job_id")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="download every artifact into this folder (made if missing)",
)
@json_option
def artifacts(job_id: str, out: Path | None, as_json: bool) -> None:
    """List a job's artifacts (a survey's report, a plot, a file); --out downloads them."""
    client = LeaflabClient()
    items = job_artifacts(client, job_id)
    if out is not None:
        for path in download(client, items, out):
            click.echo(literal(str(path)))
        return
    if as_json:
        print_json({"items": items})
        return
    rows = [
        [item["display_name"], item["size"], item["mime"], client.absolute(str(item["url"]))]
        for item in items
    ]
    print_table(COLUMNS, rows)
