"""Does a passage support a claim? A check that does not take the model's word for it.

Four model-independent checks (content-word overlap, number agreement, term
agreement, embedding cosine) give a score in [0, 1]; a model's verdict, when
there is one, can withdraw support but never grant it. A claim that shares no
content word with its passage is unsupported whatever any other check says.
"""

from services.library.claims.combine import (
    DEFAULT_THRESHOLD,
    CheckResult,
    ClaimVerdict,
    check_claim,
    check_claims,
)
from services.library.claims.embedding import Encoder, default_encoder

__all__ = [
    "DEFAULT_THRESHOLD",
    "CheckResult",
    "ClaimVerdict",
    "Encoder",
    "check_claim",
    "check_claims",
    "default_encoder",
]
