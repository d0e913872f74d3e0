"""The model simulator's auto mode: deterministic, plausible replies for unscripted requests."""

from services.model_sim.auto.reply import auto_reply
from services.model_sim.auto.schema_refs import AutoError

__all__ = ["AutoError", "auto_reply"]
