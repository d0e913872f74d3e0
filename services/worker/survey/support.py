"""The model-independent half of verify: each cited claim against its cited passages.

For every claim that cites, each key's passages (the chunks its note points at)
are checked with ``services.library.claims``; the model's verdict on the claim
is one input (it can withdraw support, never grant it). A key with no passage
to check against (a metadata-only or OpenAlex-only record) fails its check, so
the claim is flagged rather than trusted. The claim is verified only when the
check of its text against all its keys' passages supports it.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from services.library.claims import Encoder, check_claims, default_encoder
from services.worker.survey.citations import strip_citations

NO_PASSAGE = "no passage of this source to check against (metadata-only or unknown document)"


@lru_cache(maxsize=1)
def claim_encoder() -> Encoder | None:
    """The library's packaged embedder, loaded once per worker process (None: lexical-only)."""
    return default_encoder()


def check_support(
    claim_text: str,
    passages: dict[str, list[str]],
    *,
    model_verdict: str | None,
    encoder: Encoder | None,
) -> dict[str, Any]:
    """``passages``: key → its passage texts. Returns the claim's decision and, per
    citation, which checks passed (what the report and papers.json record)."""
    claim = strip_citations(claim_text)
    keyed = [k for k in passages if passages[k]]
    pairs = [(claim, " ".join(passages[k])) for k in keyed]
    pairs.append((claim, " ".join(t for k in keyed for t in passages[k])))
    verdicts = check_claims(pairs, encoder=encoder, model_verdicts=[model_verdict] * len(pairs))
    per_key: dict[str, dict[str, Any]] = {
        k: {"supported": False, "score": 0.0, "checks": {}, "reason": NO_PASSAGE}
        for k in passages
        if not passages[k]
    }
    for key, verdict in zip(keyed, verdicts, strict=False):
        per_key[key] = {
            "supported": verdict.supported,
            "score": round(verdict.score, 4),
            "checks": verdict.passed(),
            "reason": verdict.reason,
        }
    whole = verdicts[-1]
    missing = [k for k in passages if not passages[k]]
    supported = whole.supported and bool(keyed) and not missing
    reason = whole.reason
    if missing:
        reason = "; ".join(f"{k}: {NO_PASSAGE}" for k in missing) + (
            f"; {reason}" if reason else ""
        )
    return {
        "supported": supported,
        "score": round(whole.score, 4) if keyed else 0.0,
        "reason": reason or "",
        "citations": {k: per_key[k] for k in passages},
    }
