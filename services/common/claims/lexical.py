"""Lexical overlap: how much of the claim's content the passage repeats.

Measured from the claim's side (the share of its content stems found in the
passage): a short claim cited to a long passage should not be penalised for
everything else the passage says.
"""

from __future__ import annotations

from services.common.claims.result import CheckResult
from services.common.claims.words import content_stems

# Below this share of its content words, a claim is not "about" its passage.
LEXICAL_PASS = 0.35


def lexical_check(claim: str, passage: str) -> CheckResult:
    """Share of the claim's content stems present in the passage; 0 when the claim
    has none (a claim with no content cannot be supported by anything)."""
    wanted = content_stems(claim)
    if not wanted:
        return CheckResult("lexical", 0.0, False, "the claim has no content words")
    found = wanted & content_stems(passage)
    share = len(found) / len(wanted)
    missing = sorted(wanted - found)
    detail = f"{len(found)}/{len(wanted)} content words in the passage"
    if missing:
        detail += f"; missing: {', '.join(missing[:8])}"
    return CheckResult("lexical", share, share >= LEXICAL_PASS, detail)
