"""`leaflab library check-claims FILE.jsonl`: the verify stage's model-independent
claim check, run locally on (claim, passage) lines; no server, no model.

Each output line is the input object plus ``supported``, ``score``, ``reason``,
``mode`` ("combined" or "lexical-only") and ``checks`` (each check's name, value,
passed, detail). The embedder comes through ``services.library.operator``
(the only library module the CLI may import); without it, or with
``--lexical-only``, the checks run lexical-only and say so.

Malformed input (not UTF-8 JSON, not an object, a missing or non-text field, a
line over MAX_LINE_BYTES) is refused before anything is checked: every bad line
is named on stderr with its number and the command exits 2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

MAX_LINE_BYTES = 1_000_000


def _parse(number: int, raw: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """(the object, None) or (None, why line ``number`` is refused)."""
    if len(raw) > MAX_LINE_BYTES:
        return None, f"line {number}: longer than {MAX_LINE_BYTES} bytes ({len(raw)})"
    try:
        row = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        return None, f"line {number}: not valid JSON ({exc})"
    if not isinstance(row, dict):
        return None, f"line {number}: expected an object with claim and passage"
    for field in ("claim", "passage"):
        if not isinstance(row.get(field), str):
            return None, f"line {number}: {field!r} missing or not a string"
    return row, None


def _read(path: Path) -> tuple[list[tuple[int, dict[str, Any]]], list[str]]:
    rows, errors = [], []
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            row, error = _parse(number, raw.rstrip(b"\r\n"))
            if error:
                errors.append(error)
            elif row is not None:
                rows.append((number, row))
    return rows, errors


@click.command("check-claims")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--lexical-only",
    is_flag=True,
    help="skip the embedding check (used anyway only when the packaged model loads)",
)
@click.option("--json", "as_json", is_flag=True, help="one JSON object per input line")
def check_claims_cmd(path: Path, lexical_only: bool, as_json: bool) -> None:
    """Check each {"claim", "passage"} line of FILE.jsonl: supported and score, no model needed."""
    rows, errors = _read(path)
    if errors:
        for error in errors:
            click.echo(f"error: {error}", err=True)
        sys.exit(2)
    # Imported here: `leaflab --help` must not pay for numpy, the stemmer or torch.
    from services.common.claims import check_claims
    from services.library.operator import claim_encoder

    encoder = None if lexical_only or not rows else claim_encoder()
    if encoder is None and rows and not lexical_only:
        click.echo("note: the embedder could not be loaded; checks are lexical-only", err=True)
    verdicts = check_claims([(r["claim"], r["passage"]) for _, r in rows], encoder=encoder)
    out = []
    for (number, row), verdict in zip(rows, verdicts, strict=True):
        done = {**row, **verdict.as_dict()}
        out.append((number, done, verdict))
    if as_json:
        for _, done, _ in out:
            click.echo(json.dumps(done, ensure_ascii=False))
    else:
        _print_table(out)


def _print_table(out: list[tuple[int, dict[str, Any], Any]]) -> None:
    from services.cli.term.tables import Column, print_table

    columns = [
        Column("LINE", justify="right"),
        Column("SUPPORTED"),
        Column("SCORE", justify="right"),
        Column("FAILED CHECKS", flex=1),
        Column("CLAIM", flex=3, wrap=True),
    ]
    table = [
        [
            str(number),
            "yes" if done["supported"] else "NO",
            f"{done['score']:.2f}",
            ", ".join(n for n, ok in verdict.passed().items() if not ok) or "-",
            done["claim"],
        ]
        for number, done, verdict in out
    ]
    print_table(columns, table)
