"""`leaflab library ingest|import|export|list|search|delete|eval|check-claims`: clients of
the public API, plus a local eval and claim check through the library's operator entry point
(services/library/operator.py)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import click
import httpx

from services.cli.check_claims_cmd import check_claims_cmd
from services.cli.client import LeaflabClient
from services.cli.ingest_progress import Upload, follow, local_pages
from services.cli.library_import_cmd import export_cmd, import_cmd
from services.cli.term.literal import literal, shorten
from services.cli.term.output import json_option, print_json, stdout_console
from services.cli.term.tables import Column, print_table

SEARCH_COLUMNS = [
    Column("#", justify="right"),
    Column("SCORE", justify="right"),
    Column("PAPER", flex=2),
    Column("PAGE", justify="right"),
    Column("SECTION", flex=1, drop=1),
    Column("TEXT", flex=3, wrap=True),
]
SNIPPET_CHARS = 300
LIST_COLUMNS = [
    Column("ID"),
    Column("TITLE", flex=3, wrap=True),
    Column("AUTHORS", flex=2, wrap=True),
    Column("YEAR", justify="right"),
    Column("STATUS"),
    Column("COLLECTION", drop=1),
]


def authors_text(authors: list[str], most: int = 3) -> str:
    """The first ``most`` names: "A, B, C" or "A, B, C et al."."""
    if not authors:
        return ""
    shown = ", ".join(authors[:most])
    return shown + (" et al." if len(authors) > most else "")


def _api() -> tuple[str, dict[str, str]]:
    url = os.environ.get("LEAFLAB_URL", "http://127.0.0.1:8000").rstrip("/")
    key = os.environ.get("LEAFLAB_API_KEY")
    if not key:
        home = Path(os.environ.get("LEAFLAB_HOME", Path.home() / ".leaflab"))
        key_file = home / "admin.key"
        if not key_file.is_file():
            raise click.ClickException(f"set LEAFLAB_API_KEY or create {key_file}")
        key = key_file.read_text().strip()
    return url, {"Authorization": f"Bearer {key}"}


def _pdfs(paths: tuple[str, ...]) -> list[Path]:
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found += sorted(p for p in path.rglob("*") if p.suffix.lower() == ".pdf")
        elif path.is_file():
            found.append(path)
        else:
            raise click.ClickException(f"{path} does not exist")
    return found


@click.group("library")
def library() -> None:
    """The lab's paper library."""


library.add_command(check_claims_cmd)
library.add_command(import_cmd)
library.add_command(export_cmd)


@library.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--project", default=None, help="project name or id (default: your own library)")
@click.option("--lab", is_flag=True, help="into the lab library, which every member reads")
@click.option(
    "--wait/--no-wait",
    default=True,
    help="follow the documents until ready or failed (progress bar on a terminal)",
)
@json_option
def ingest(
    paths: tuple[str, ...], project: str | None, lab: bool, wait: bool, as_json: bool
) -> None:
    """Upload PDF files or folders of PDFs."""
    if lab and project:
        raise click.UsageError("give --project or --lab, not both")
    target = {"collection": "lab"} if lab else {"project": project} if project else {}
    url, headers = _api()
    console = stdout_console()
    failures = 0
    uploads: list[Upload] = []
    rejected: list[dict[str, Any]] = []
    with httpx.Client(timeout=120) as client:
        for pdf in _pdfs(paths):
            with pdf.open("rb") as fh:
                resp = client.post(
                    f"{url}/v1/library/documents",
                    headers=headers,
                    files={"file": (pdf.name, fh, "application/pdf")},
                    data=target,
                )
            if resp.status_code == 202:
                body = resp.json()
                note = " (already in the library)" if body.get("duplicate") else ""
                if not as_json:
                    click.echo(f"{literal(pdf)}: {body['status']} {body['id']}{note}")
                upload = Upload(pdf, str(body["id"]), local_pages(pdf), body["status"], body)
                uploads.append(upload)
            else:
                failures += 1
                message = _error_message(resp)
                rejected.append({"path": str(pdf), "status": resp.status_code, "error": message})
                click.echo(f"{literal(pdf)}: rejected: {literal(message)}", err=True)
        if wait and uploads:
            interactive = console.is_terminal and not as_json
            failures += follow(
                client,
                url,
                headers,
                uploads,
                interactive=interactive,
                console=console,
                quiet=as_json,
            )
    if as_json:
        documents = [{"path": str(u.path), **(u.document or {})} for u in uploads]
        print_json({"items": documents, "rejected": rejected}, console=console)
    if failures:
        raise SystemExit(1)


def _error_message(resp: httpx.Response) -> str:
    try:
        return str(resp.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return resp.text[:200]


@library.command()
@click.argument("query")
@click.option(
    "--mode",
    default="mix",
    type=click.Choice(["survey", "derive", "write", "keyword", "vector", "mix"]),
)
@click.option("--k", default=10, type=int)
@click.option("--project", default=None)
@json_option
def search(query: str, mode: str, k: int, project: str | None, as_json: bool) -> None:
    """Search the library: paper, page, locator and the matching text of each hit."""
    url, headers = _api()
    params: dict[str, str | int] = {"q": query, "mode": mode, "k": k}
    if project:
        params["project"] = project
    resp = httpx.get(f"{url}/v1/library/search", headers=headers, params=params, timeout=60)
    if resp.status_code != 200:
        raise click.ClickException(literal(_error_message(resp)))
    if as_json:
        print_json(resp.json())
        return
    rows = [
        [
            i,
            f"{hit['score']:.4f}",
            hit.get("title") or hit.get("filename") or hit.get("document_id"),
            "" if hit.get("page") is None else hit["page"],
            hit_section(hit),
            shorten(str(hit.get("text") or ""), SNIPPET_CHARS),
        ]
        for i, hit in enumerate(resp.json()["items"], start=1)
    ]
    print_table(SEARCH_COLUMNS, rows)


def hit_section(hit: dict[str, object]) -> str:
    """Where in the paper, without what the PAPER and PAGE columns already say (a
    locator reads "Title | 2 Methods | p. 3")."""
    if hit.get("section"):
        return str(hit["section"])
    parts = [p.strip() for p in str(hit.get("locator") or "").split("|")]
    title = str(hit.get("title") or "").strip()
    kept = [p for p in parts if p and p != title and not re.fullmatch(r"p\. ?\d+", p)]
    return " | ".join(kept)


@library.command("list")
@json_option
def list_cmd(as_json: bool) -> None:
    """The documents you may read: id, title, authors, year, status, collection."""
    url, headers = _api()
    resp = httpx.get(f"{url}/v1/library/documents", headers=headers, timeout=60)
    if resp.status_code != 200:
        raise click.ClickException(literal(_error_message(resp)))
    if as_json:
        print_json(resp.json())
        return
    rows = [
        [
            str(d["id"])[:8],
            ("RETRACTED " if d.get("retracted") else "")
            + (d.get("title") or d.get("filename") or "")
            + (" (duplicate)" if d.get("duplicate_of") else ""),
            authors_text([str(a) for a in d.get("authors") or []]),
            "" if d.get("year") is None else d["year"],
            d.get("status") or "",
            d.get("collection_name") or d.get("collection") or "",
        ]
        for d in resp.json()["items"]
    ]
    print_table(LIST_COLUMNS, rows)


@library.command()
@click.argument("doc_id")
def delete(doc_id: str) -> None:
    """Delete a document: its passages leave search, its file leaves the store."""
    LeaflabClient().request("DELETE", f"/v1/library/documents/{quote(doc_id, safe='')}")
    click.echo(f"deleted document {literal(doc_id)}: its passages no longer appear in search")


@library.command("eval")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--limit-docs", type=int, default=None, help="index at most N documents")
@click.option("--limit-queries", type=int, default=None, help="score at most N queries")
@click.option(
    "--embedding-cache",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="folder caching chunk vectors across runs (keyed by model, window and text)",
)
def eval_cmd(
    directory: Path,
    limit_docs: int | None,
    limit_queries: int | None,
    embedding_cache: Path | None,
) -> None:
    """Index a BEIR folder in a scratch store (the ingestion path: chunk, embed,
    store) and print one JSON line: hybrid nDCG@10 / recall@100 on top, BM25-only
    and dense-only from the same index under "bm25" and "dense"."""
    from services.library.operator import run_eval

    for name, value in (("--limit-docs", limit_docs), ("--limit-queries", limit_queries)):
        if value is not None and value < 1:
            raise click.BadParameter(f"{name} must be at least 1")
    try:
        result = run_eval(
            directory,
            limit_docs=limit_docs,
            limit_queries=limit_queries,
            embedding_cache=embedding_cache,
        )
    except FileNotFoundError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(json.dumps(result))


if __name__ == "__main__":
    library()
