"""`leaflab library import FILE` and `leaflab library export`: a bibliography in,
a collection out as BibTeX, through the public API.

`import` uploads the file (BibTeX, CSL-JSON or Better BibTeX JSON), or names a
Zotero library (``--zotero-user ID`` / ``--zotero-group ID`` with ``--zotero-key``
or ``LEAFLAB_ZOTERO_KEY``; the key goes to the API in the request body, which
reads the library and forgets the key), then follows
the import job until every entry is settled (``--no-wait`` returns at once),
printing progress on stderr and the summary — matched, fetched, metadata-only,
skipped, each skipped entry with its reason — on stdout (``--json``: the import
as the API returns it). Exit 1 when the server refused the file or the import
failed (Zotero refused the key, say: the reason is printed).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import click

from services.cli.client import LeaflabClient
from services.cli.term.literal import literal
from services.cli.term.output import json_option, print_json

POLL_S = 0.5


@click.command("import")
@click.argument(
    "file", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@click.option("--zotero-user", type=click.IntRange(min=1), help="a Zotero user library id")
@click.option("--zotero-group", type=click.IntRange(min=1), help="a Zotero group library id")
@click.option(
    "--zotero-key",
    envvar="LEAFLAB_ZOTERO_KEY",
    show_envvar=True,
    help="a Zotero API key that may read the library (zotero.org/settings/keys)",
)
@click.option("--project", default=None, help="project name or id (default: your own library)")
@click.option("--lab", is_flag=True, help="into the lab library, which every member reads")
@click.option("--wait/--no-wait", default=True, help="follow the import until it is done")
@json_option
def import_cmd(
    file: Path | None,
    zotero_user: int | None,
    zotero_group: int | None,
    zotero_key: str | None,
    project: str | None,
    lab: bool,
    wait: bool,
    as_json: bool,
) -> None:
    """Import a bibliography file or a Zotero library: each entry becomes a document."""
    if lab and project:
        raise click.UsageError("give --project or --lab, not both")
    if sum(x is not None for x in (file, zotero_user, zotero_group)) != 1:
        raise click.UsageError("give a FILE, --zotero-user ID or --zotero-group ID (one of them)")
    target = {"collection": "lab"} if lab else {"project": project} if project else {}
    client = LeaflabClient()
    if file is not None:
        body = client.request(
            "POST",
            "/v1/library/imports",
            files={"file": (file.name, file.read_bytes(), "application/octet-stream")},
            data=target,
        )
    else:
        if not zotero_key:
            raise click.UsageError("a Zotero import needs --zotero-key or LEAFLAB_ZOTERO_KEY")
        library = {"user": zotero_user} if zotero_user else {"group": zotero_group}
        body = client.request(
            "POST", "/v1/library/imports", json={"zotero": {**library, "key": zotero_key}, **target}
        )
    if wait:
        body = _follow(client, body["id"], quiet=as_json)
    if as_json:
        print_json(body)
    else:
        _print_summary(body)
    if body.get("error"):
        sys.exit(1)


def _follow(client: LeaflabClient, import_id: str, *, quiet: bool) -> Any:
    last = None
    while True:
        body = client.request("GET", f"/v1/library/imports/{import_id}")
        progress = (body["done"], body["total"])
        if progress != last and not quiet:
            click.echo(f"import {import_id}: {progress[0]}/{progress[1]} entries", err=True)
            last = progress
        if body["status"] == "done":
            return body
        time.sleep(POLL_S)


def _print_summary(body: dict[str, Any]) -> None:
    s = body["summary"]
    click.echo(
        f"import {body['id']} ({body['format']}, {body['total']} entries) {body['status']}: "
        f"{s['matched']} matched, {s['fetched']} fetched, "
        f"{s['metadata_only']} metadata-only, {s['skipped']} skipped"
        + (f", {s['pending']} pending" if s["pending"] else "")
    )
    for entry in body.get("entries") or []:
        if entry["state"] == "skipped":
            name = entry.get("key") or f"entry {entry['ordinal'] + 1}"
            click.echo(f"  skipped {literal(name)}: {literal(entry.get('reason') or '')}")
    if body.get("error"):
        click.echo(f"error: {literal(body['error'])}", err=True)


@click.command("export")
@click.option("--project", default=None, help="project name or id (default: your own library)")
@click.option("--lab", is_flag=True, help="the lab library")
def export_cmd(project: str | None, lab: bool) -> None:
    """Write a collection as BibTeX on stdout (`> refs.bib`)."""
    if lab and project:
        raise click.UsageError("give --project or --lab, not both")
    params = {"collection": "lab"} if lab else {"project": project} if project else {}
    query = urlencode(params)
    data = LeaflabClient().content("/v1/library/export.bib" + (f"?{query}" if query else ""))
    sys.stdout.buffer.write(data)
    sys.stdout.flush()
