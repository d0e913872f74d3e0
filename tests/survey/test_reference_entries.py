"""The survey's reference list and references.bib from a paper's metadata: full
entries (author, title, year, booktitle / journal / eprint, doi), and a reference
line with no "Unknown authors" and never a doubled period."""

from __future__ import annotations

from typing import Any

from services.worker.survey.latex import render_bib
from services.worker.survey.markdown import reference_line


def _paper(**fields: Any) -> dict[str, Any]:
    base = {
        "key": "chang2023citesee",
        "title": "CiteSee: Augmenting Citations",
        "authors": ["Joseph Chee Chang", "Amy X. Zhang"],
        "year": 2023,
        "doi": "10.1145/3544548.3580847",
        "venue": "Proceedings of the 2023 CHI Conference on Human Factors in Computing",
        "arxiv_id": "2302.07302",
        "document_id": "d1",
        "openalex_id": None,
    }
    return {**base, **fields}


def test_a_library_paper_is_a_full_inproceedings_entry() -> None:
    bib = render_bib([_paper()])
    assert bib.startswith("@inproceedings{chang2023citesee,")
    for field in (
        "author = {Joseph Chee Chang and Amy X. Zhang}",
        "title = {{CiteSee: Augmenting Citations}}",
        "year = {2023}",
        "booktitle = {Proceedings of the 2023 CHI Conference on Human Factors in Computing}",
        "eprint = {2302.07302}",
        "archivePrefix = {arXiv}",
        "doi = {10.1145/3544548.3580847}",
    ):
        assert field in bib, (field, bib)


def test_a_preprint_is_misc_with_its_eprint_and_a_journal_an_article() -> None:
    preprint = render_bib([_paper(venue=None, doi=None)])
    assert preprint.startswith("@misc{") and "eprint = {2302.07302}" in preprint
    article = render_bib([_paper(venue="Nature Machine Intelligence", arxiv_id=None)])
    assert article.startswith("@article{") and "journal = {Nature Machine Intelligence}" in article


def test_reference_lines_never_say_unknown_authors_or_double_a_period() -> None:
    line = reference_line(_paper())
    assert line.startswith("Joseph Chee Chang, Amy X. Zhang. *CiteSee: Augmenting Citations*. ")
    assert "2023. arXiv:2302.07302. doi:10.1145/3544548.3580847" in line
    bare = reference_line(_paper(authors=[], year=None, venue=None, arxiv_id=None, doi=None))
    assert bare == "*CiteSee: Augmenting Citations*. n.d. library document d1."
    assert ".." not in bare and "Unknown" not in bare
