"""The metadata rules on strings (services/library/metadata): arXiv ids old and
new with versions, DOIs, PubMed ids, years, author names from a PDF field."""

from __future__ import annotations

from services.library.metadata.authors import names_from_field, names_from_words
from services.library.metadata.identifiers import (
    arxiv_from_filename,
    arxiv_year,
    find_arxiv,
    find_doi,
    find_pmid,
    pdf_year,
)


def test_arxiv_ids_new_and_old_style_without_their_version() -> None:
    assert find_arxiv("see arXiv:2101.00001v2 [cs.CL] 3 Jan 2021") == "2101.00001"
    assert find_arxiv("https://arxiv.org/abs/1706.03762") == "1706.03762"
    assert find_arxiv("preprint arXiv:hep-th/9901001v3") == "hep-th/9901001"
    assert find_arxiv("math.AG/0309136 is not marked") is None
    assert arxiv_year("2101.00001") == 2021 and arxiv_year("hep-th/9901001") == 1999
    assert arxiv_year("1913.00001") is None  # month 13
    assert arxiv_from_filename("1903.10676.pdf") == "1903.10676"
    assert arxiv_from_filename("paper.pdf") is None


def test_dois_pmids_and_pdf_dates() -> None:
    assert find_doi("DOI: https://doi.org/10.1145/3544548.3580847.") == "10.1145/3544548.3580847"
    assert find_doi("no identifier here") is None
    assert find_pmid("PMID: 31234567") == "31234567"
    assert pdf_year("D:20230217195853Z") == 2023 and pdf_year("garbage") is None


def test_author_names_from_the_pdf_field_and_from_word_boxes() -> None:
    assert names_from_field("Kyle Lo ; Lucy Lu Wang ; Daniel Weld") == [
        "Kyle Lo",
        "Lucy Lu Wang",
        "Daniel Weld",
    ]
    assert names_from_field("A. Smith and B. Jones, University of Nowhere") == [
        "A. Smith",
        "B. Jones",
    ]
    line = [
        (0.0, 30.0, 10.0, "Kyle"),
        (33.0, 50.0, 10.0, "Lo†∗"),
        (53.0, 80.0, 10.0, "Erin"),
        (83.0, 120.0, 10.0, "Bransom♢"),
        (140.0, 160.0, 10.0, "Doug"),  # a quad apart: a new name
        (163.0, 200.0, 10.0, "Downey"),
        (230.0, 300.0, 10.0, "kylel@allenai.org"),
    ]
    wrapped = [
        [(0.0, 40.0, 10.0, "Andrew")],
        [(0.0, 10.0, 10.0, "D."), (13.0, 50.0, 10.0, "White∗,‡")],
    ]
    assert names_from_words([line]) == ["Kyle Lo", "Erin Bransom", "Doug Downey"]
    assert names_from_words(wrapped) == ["Andrew D. White"]
    affiliation = [
        [
            (0.0, 60.0, 10.0, "University"),
            (63.0, 80.0, 10.0, "of"),
            (83.0, 130.0, 10.0, "Rochester"),
        ]
    ]
    assert names_from_words(affiliation) == []
