"""How well a cited work matches what OpenAlex holds: confirmed / partial /
unverified / mismatch, each with the reasons a reader can check.

- confirmed: the work was found and every detail given agrees (a year off by
  one counts as agreeing: preprint and journal years differ).
- partial: found, but some given detail disagrees or the title only resembles.
- mismatch: the DOI exists but names a different work, or the title matches a
  work whose DOI differs from the one given.
- unverified: nothing in OpenAlex resembles the citation.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from difflib import SequenceMatcher

from services.worker.tools.papers.openalex import Work, normalise_title

SAME_TITLE = 0.9
SIMILAR_TITLE = 0.6


@dataclass(frozen=True)
class Claim:
    title: str | None
    doi: str | None  # normalised
    authors: list[str]
    year: int | None


@dataclass
class Verdict:
    verdict: str
    reasons: list[str] = field(default_factory=list)
    work: Work | None = None


def title_similarity(a: str, b: str) -> float:
    left, right = normalise_title(a), normalise_title(b)
    if not left or not right:
        return 0.0
    return SequenceMatcher(None, left, right).ratio()


def _surname(name: str) -> str:
    text = unicodedata.normalize("NFKD", name)
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).lower()
    # "Vaswani, Ashish" and "Ashish Vaswani" name the same person.
    if "," in text:
        text = text.split(",", 1)[0]
    else:
        text = text.split()[-1] if text.split() else ""
    return "".join(ch for ch in text if ch.isalpha())


def detail_problems(claim: Claim, work: Work) -> list[str]:
    """What the claim states that the work contradicts (authors, year)."""
    problems: list[str] = []
    if claim.authors and work.authors:
        theirs = {_surname(a) for a in work.authors}
        given = [a for a in claim.authors if _surname(a)]
        missing = [a for a in given if _surname(a) not in theirs]
        if given and len(missing) == len(given):
            problems.append(
                f"none of the given authors ({', '.join(given[:5])}) is an author of this work"
            )
        elif missing:
            problems.append(f"not among this work's authors: {', '.join(missing[:5])}")
    if claim.year is not None and work.year is not None and abs(claim.year - work.year) > 1:
        problems.append(f"year {claim.year} given, OpenAlex has {work.year}")
    return problems


def judge_doi_hit(claim: Claim, work: Work) -> Verdict:
    """The DOI was found: does the rest of the claim describe the same work?"""
    reasons = [f"DOI {claim.doi} found in OpenAlex ({work.openalex_id})"]
    if claim.title:
        similarity = title_similarity(claim.title, work.title)
        if similarity < SIMILAR_TITLE:
            reasons.append(f"but the DOI belongs to a different work: {work.title!r}")
            return Verdict("mismatch", reasons, work)
        if similarity < SAME_TITLE:
            reasons.append(f"title only resembles the recorded one: {work.title!r}")
            return Verdict("partial", reasons + detail_problems(claim, work), work)
    problems = detail_problems(claim, work)
    return Verdict("partial" if problems else "confirmed", reasons + problems, work)


def judge_title_hits(claim: Claim, candidates: list[Work]) -> Verdict:
    """Only a title (or a DOI OpenAlex lacks): the best-matching candidate decides."""
    assert claim.title
    scored = sorted(
        ((title_similarity(claim.title, w.title), w) for w in candidates),
        key=lambda pair: pair[0],
        reverse=True,
    )
    if not scored or scored[0][0] < SIMILAR_TITLE:
        return Verdict("unverified", ["no work with a similar title in OpenAlex"])
    similarity, work = scored[0]
    reasons = [f"title matches {work.openalex_id} ({similarity:.0%} similar)"]
    if claim.doi and work.doi and claim.doi != work.doi and similarity >= SAME_TITLE:
        reasons.append(f"but its DOI is {work.doi}, not {claim.doi} (OpenAlex has no {claim.doi})")
        return Verdict("mismatch", reasons, work)
    problems = detail_problems(claim, work)
    if claim.doi:
        problems.append(f"DOI {claim.doi} not found in OpenAlex")
    if similarity < SAME_TITLE:
        problems.append(f"closest recorded title: {work.title!r}")
    return Verdict("partial" if problems else "confirmed", reasons + problems, work)
