"""Does a passage support a claim? A check that does not take the model's word for it.

Four model-independent checks (content-word overlap, number agreement, term
agreement, embedding cosine) give a score in [0, 1]; a model's verdict, when
there is one, can withdraw support but never grant it. A claim that shares no
content word with its passage is unsupported whatever any other check says.

Pure: no model, no network, no database. The embedding check runs only when the
caller injects an encoder (``encode(texts) -> vectors``); without one the
verdicts say ``mode="lexical-only"``. Lives in common so the worker, the library
service and the CLI share one definition of "supported".
"""

from services.common.claims.combine import (
    DEFAULT_THRESHOLD,
    CheckResult,
    ClaimVerdict,
    check_claim,
    check_claims,
)
from services.common.claims.embedding import Encoder

__all__ = [
    "DEFAULT_THRESHOLD",
    "CheckResult",
    "ClaimVerdict",
    "Encoder",
    "check_claim",
    "check_claims",
]
