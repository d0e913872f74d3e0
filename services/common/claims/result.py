"""One check's outcome, as the report and the CLI show it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CheckResult:
    """``value`` in [0, 1] (1 = full agreement); ``passed`` is the check's own verdict
    at its own bar; ``detail`` says what was missing, for a reader."""

    name: str
    value: float
    passed: bool
    detail: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "value": round(self.value, 4),
            "passed": self.passed,
            "detail": self.detail,
        }
