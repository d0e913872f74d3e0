"""Reading bibliography files (services/common/bibliography) on their own: what each
format's quirks become, and the limits that refuse a file before it is parsed."""

from __future__ import annotations

import json
import time

import pytest

from services.common.bibliography import Entry, NotABibliography, read_bibliography
from services.common.bibliography.read import MAX_ENTRIES


def test_a_huge_file_is_refused_before_it_is_parsed() -> None:
    started = time.perf_counter()
    with pytest.raises(NotABibliography, match=f"import at most {MAX_ENTRIES}"):
        read_bibliography(b"@misc{a, title={A Paper}}\n" * (MAX_ENTRIES + 1))
    assert time.perf_counter() - started < 2  # counted, not parsed (600 entries/s)
    # @string, @comment and @preamble blocks are not entries.
    macros = b"@string{x = {y}}\n" * MAX_ENTRIES + b"@misc{a, title={A Paper}}\n"
    assert len(read_bibliography(macros).entries) == 1


def test_latin1_bibtex_zotero_file_urls_and_arxiv_dois() -> None:
    raw = (
        "@article{a, author = {Müller, Jörg}, title = {Ähnlichkeit und Maß}, year = {2001},\n"
        "  file = {Full Text PDF:https\\://example.org/papers/a.pdf:application/pdf;"
        "Snapshot:files/1/a.html:text/html}}\n"
        "@misc{b, title = {A Preprint Only}, doi = {10.48550/arXiv.2101.00001}}\n"
        "@misc{c, title = {Local File Only}, file = {PDF:/home/ana/c.pdf:application/pdf}}\n"
    ).encode("latin-1")
    a, b, c = read_bibliography(raw).entries
    assert a.authors == ["Jörg Müller"] and a.title == "Ähnlichkeit und Maß"
    assert a.pdf_url == "https://example.org/papers/a.pdf"
    assert b.arxiv_id == "2101.00001" and b.doi is None
    assert c.pdf_url is None  # a path on someone's disk is nothing to fetch


def test_csl_json_wrapped_in_items_and_identity_of_an_entry() -> None:
    data = {
        "items": [{"type": "article", "title": "Same Paper", "DOI": "https://doi.org/10.1234/X"}]
    }
    (entry,) = read_bibliography(json.dumps(data).encode()).entries
    assert entry.doi == "10.1234/x" and entry.identity() == "doi:10.1234/x"
    untitled = Entry(title="Über  Graphen — eine Übersicht")
    assert untitled.identity() == "title:uber graphen eine ubersicht"
