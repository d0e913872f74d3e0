"""Number and term agreement: what the claim states exactly must be in the passage.

A claim that says 45% cited to a passage that says 30% shares most of its words
with it; only the number tells them apart. Likewise a gene or acronym the
passage never names. Both checks pass vacuously when the claim has nothing to
agree on (value 1.0), so they lower a score, never raise one.
"""

from __future__ import annotations

from services.common.claims.result import CheckResult
from services.common.claims.words import named_terms, numbers, plain


def _fmt(value: float) -> str:
    return f"{value:g}"


def number_check(claim: str, passage: str) -> CheckResult:
    """Share of the claim's numbers that the passage also states."""
    wanted = numbers(claim)
    if not wanted:
        return CheckResult("numbers", 1.0, True, "no numbers in the claim")
    found = wanted & numbers(passage)
    missing = sorted(wanted - found)
    detail = f"{len(found)}/{len(wanted)} numbers in the passage"
    if missing:
        detail += f"; not in the passage: {', '.join(_fmt(n) for n in missing)}"
    return CheckResult("numbers", len(found) / len(wanted), not missing, detail)


def term_check(claim: str, passage: str) -> CheckResult:
    """Share of the claim's named terms (acronyms, gene-like names) in the passage.
    A term counts as present when the passage contains it anywhere, case aside
    ("PrP" in "PrP-positive")."""
    wanted = named_terms(claim)
    if not wanted:
        return CheckResult("terms", 1.0, True, "no named terms in the claim")
    haystack = plain(passage).lower()
    missing = sorted(t for t in wanted if t not in haystack)
    share = (len(wanted) - len(missing)) / len(wanted)
    detail = f"{len(wanted) - len(missing)}/{len(wanted)} named terms in the passage"
    if missing:
        detail += f"; not in the passage: {', '.join(missing)}"
    return CheckResult("terms", share, not missing, detail)
