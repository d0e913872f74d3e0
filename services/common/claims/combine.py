"""The combined decision: a score from the model-independent checks, then the rules.

``score`` is a weighted mean of the independent checks' values (lexical,
embedding when an encoder is given, numbers, terms). ``supported`` holds only
when all of these do:

- the claim shares content with its passage (lexical value above zero): a
  claim with no word in common with what it cites is unsupported, whatever the
  embedding or the model says;
- every number the claim states is in the passage (a claim of 45% cited to a
  passage that says 30% shares most of its words and is still wrong);
- the score reaches the threshold (calibrated on SciFact train claims, see
  bench/claim_check.py and bench/RESULTS.md);
- the model, when it gave a verdict, did not call the claim unsupported. The
  model can withdraw support, never grant it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from services.common.claims.agreement import number_check, term_check
from services.common.claims.embedding import Encoder, embedding_checks
from services.common.claims.lexical import lexical_check
from services.common.claims.result import CheckResult

# Weights of the independent checks; numbers and terms only ever lower a score.
WEIGHTS_WITH_EMBEDDING = {"lexical": 0.45, "embedding": 0.35, "numbers": 0.1, "terms": 0.1}
WEIGHTS_LEXICAL_ONLY = {"lexical": 0.7, "numbers": 0.15, "terms": 0.15}
# Chosen on the calibration half of SciFact train pairs (bench/claim_check.py).
DEFAULT_THRESHOLD = 0.52
LEXICAL_ONLY_THRESHOLD = 0.51
MODEL_VALUES = {"supported": 1.0, "partially_supported": 0.5, "unsupported": 0.0}


@dataclass(frozen=True)
class ClaimVerdict:
    """The decision on one (claim, passage) pair and every check behind it."""

    score: float
    supported: bool
    checks: list[CheckResult] = field(default_factory=list)
    reason: str = ""
    # "combined" (an encoder was given) or "lexical-only" (none was: said, not hidden)
    mode: str = "combined"

    def passed(self) -> dict[str, bool]:
        """Check name → whether it passed (what a report lists per citation)."""
        return {c.name: c.passed for c in self.checks}

    def as_dict(self) -> dict[str, object]:
        return {
            "score": round(self.score, 4),
            "supported": self.supported,
            "reason": self.reason,
            "mode": self.mode,
            "checks": [c.as_dict() for c in self.checks],
        }


def _model_check(verdict: str) -> CheckResult:
    value = MODEL_VALUES.get(verdict, 0.0)
    return CheckResult("model", value, verdict in ("supported", "partially_supported"), verdict)


def _decide(
    checks: list[CheckResult], *, model_verdict: str | None, threshold: float
) -> ClaimVerdict:
    by_name = {c.name: c for c in checks}
    weights = WEIGHTS_WITH_EMBEDDING if "embedding" in by_name else WEIGHTS_LEXICAL_ONLY
    score = sum(w * by_name[n].value for n, w in weights.items()) / sum(weights.values())
    reasons = []
    if by_name["lexical"].value <= 0.0:
        reasons.append("the claim shares no content word with its passage")
    elif not by_name["numbers"].passed:
        reasons.append(f"numbers disagree ({by_name['numbers'].detail})")
    elif score < threshold:
        failed = [c.name for c in checks if not c.passed]
        reasons.append(
            f"support score {score:.2f} below {threshold:.2f}"
            + (f" (failed: {', '.join(failed)})" if failed else "")
        )
    if model_verdict is not None:
        model = _model_check(model_verdict)
        checks = [*checks, model]
        if not model.passed:
            reasons.append(f"the model judged it {model_verdict}")
    mode = "combined" if "embedding" in by_name else "lexical-only"
    return ClaimVerdict(score, not reasons, checks, "; ".join(reasons), mode)


def check_claims(
    pairs: list[tuple[str, str]],
    *,
    encoder: Encoder | None = None,
    model_verdicts: list[str | None] | None = None,
    threshold: float | None = None,
) -> list[ClaimVerdict]:
    """One verdict per (claim, passage) pair; embeddings in one batch when an
    encoder is given, lexical-only (with its own threshold) when not."""
    embedded = embedding_checks(encoder, pairs) if encoder is not None else []
    bar = threshold
    if bar is None:
        bar = DEFAULT_THRESHOLD if encoder is not None else LEXICAL_ONLY_THRESHOLD
    verdicts = model_verdicts or [None] * len(pairs)
    out = []
    for i, (claim, passage) in enumerate(pairs):
        checks = [lexical_check(claim, passage)]
        if embedded:
            checks.append(embedded[i])
        checks += [number_check(claim, passage), term_check(claim, passage)]
        out.append(_decide(checks, model_verdict=verdicts[i], threshold=bar))
    return out


def check_claim(
    claim: str,
    passage: str,
    *,
    encoder: Encoder | None = None,
    model_verdict: str | None = None,
    threshold: float | None = None,
) -> ClaimVerdict:
    """The verdict on one pair (see ``check_claims``)."""
    (verdict,) = check_claims(
        [(claim, passage)], encoder=encoder, model_verdicts=[model_verdict], threshold=threshold
    )
    return verdict
