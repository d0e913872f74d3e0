"""`leaflab library ingest|search|eval`: clients of the public API, plus a local
eval through the library's operator entry point (services/library/operator.py)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click
import httpx

from services.cli.ingest_progress import Upload, follow, local_pages


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


@library.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--project", default=None, help="project name or id (default: your own library)")
@click.option(
    "--wait/--no-wait",
    default=True,
    help="follow the documents until ready or failed (progress bar on a terminal)",
)
def ingest(paths: tuple[str, ...], project: str | None, wait: bool) -> None:
    """Upload PDF files or folders of PDFs."""
    url, headers = _api()
    failures = 0
    uploads: list[Upload] = []
    with httpx.Client(timeout=120) as client:
        for pdf in _pdfs(paths):
            with pdf.open("rb") as fh:
                resp = client.post(
                    f"{url}/v1/library/documents",
                    headers=headers,
                    files={"file": (pdf.name, fh, "application/pdf")},
                    data={"project": project} if project else {},
                )
            if resp.status_code == 202:
                body = resp.json()
                note = " (already in the library)" if body.get("duplicate") else ""
                click.echo(f"{pdf}: {body['status']} {body['id']}{note}")
                uploads.append(Upload(pdf, str(body["id"]), local_pages(pdf), body["status"]))
            else:
                failures += 1
                message = resp.json().get("error", {}).get("message", resp.text[:200])
                click.echo(f"{pdf}: rejected: {message}", err=True)
        if wait and uploads:
            interactive = sys.stdout.isatty()
            failures += follow(client, url, headers, uploads, interactive=interactive)
    if failures:
        raise SystemExit(1)


@library.command()
@click.argument("query")
@click.option(
    "--mode",
    default="mix",
    type=click.Choice(["survey", "derive", "write", "keyword", "vector", "mix"]),
)
@click.option("--k", default=10, type=int)
@click.option("--project", default=None)
def search(query: str, mode: str, k: int, project: str | None) -> None:
    """Search the library and print locators with text."""
    url, headers = _api()
    params: dict[str, str | int] = {"q": query, "mode": mode, "k": k}
    if project:
        params["project"] = project
    resp = httpx.get(f"{url}/v1/library/search", headers=headers, params=params, timeout=60)
    if resp.status_code != 200:
        raise click.ClickException(resp.json().get("error", {}).get("message", resp.text[:200]))
    for i, hit in enumerate(resp.json()["items"], start=1):
        click.echo(f"[{i}] {hit['score']:.4f}  {hit['locator']}")
        click.echo(f"    {hit['text'][:300]}")


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
