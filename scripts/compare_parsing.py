"""Compare chunks and locators of the shared PDFs: this checkout vs a git ref.

    .venv/bin/python scripts/compare_parsing.py [--ref 456acca] [--pdfs DIR]

The ref's ``services/`` is exported to a temporary folder and both parsers run
in-process (no pool: the comparison is about what is read, not isolation).
Prints per paper: chunk counts, characters, chunk kinds, and samples of text
that only one side has (words lost or gained), then one JSON summary line.
Nothing is written into the repository.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DUMP = """
import json, sys
from pathlib import Path
from services.library.parsing.pdf_structure import parse_pdf
from services.library.chunking import chunk_blocks
out = {}
for f in sorted(Path(sys.argv[1]).glob("*.pdf")):
    r = parse_pdf(str(f), max_pages=1500)
    chunks = chunk_blocks(r["blocks"], paper=r["title"] or f.name, max_tokens=220)
    out[f.name] = {
        "title": r["title"],
        "references": len(r["structure"]["references"]),
        "chunks": [[c.locator, c.kind, c.text] for c in chunks],
    }
print(json.dumps(out))
"""


def _shared_pdfs() -> Path:
    for folder in ROOT.parents:
        if (folder / "shared" / "data" / "pdfs").is_dir():
            return folder / "shared" / "data" / "pdfs"
    return ROOT.parent / "shared" / "data" / "pdfs"


def _dump(root: Path, pdfs: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", DUMP, str(pdfs)],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def _words(chunks: list[list[str]]) -> Counter[str]:
    return Counter(w for c in chunks for w in re.findall(r"\w+", c[2]))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ref", default="456acca")
    parser.add_argument("--pdfs", type=Path, default=_shared_pdfs())
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ["git", "archive", args.ref, "services"], cwd=ROOT, capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        old = _dump(Path(tmp), args.pdfs)
    new = _dump(ROOT, args.pdfs)
    summary = {}
    for name in sorted(old):
        o, n = old[name], new[name]
        lost = _words(o["chunks"]) - _words(n["chunks"])
        gained = _words(n["chunks"]) - _words(o["chunks"])
        o_loc = {c[0] for c in o["chunks"]}
        n_loc = {c[0] for c in n["chunks"]}
        summary[name] = {
            "chunks": [len(o["chunks"]), len(n["chunks"])],
            "chars": [sum(len(c[2]) for c in o["chunks"]), sum(len(c[2]) for c in n["chunks"])],
            "references": [o["references"], n["references"]],
            "title": [o["title"], n["title"]],
            "kinds": dict(Counter(c[1] for c in n["chunks"])),
            "locators_only_old": len(o_loc - n_loc),
            "locators_only_new": len(n_loc - o_loc),
        }
        print(f"== {name}")
        for key, value in summary[name].items():
            print(f"   {key}: {value}")
        print(f"   words lost ({sum(lost.values())}): {sorted(lost)[:25]}")
        print(f"   words gained ({sum(gained.values())}): {sorted(gained)[:25]}")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
