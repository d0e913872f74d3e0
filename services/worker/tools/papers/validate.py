"""`paper_validate(title?, doi?, authors?, year?)`: check a citation against OpenAlex.

Answers a verdict — confirmed / partial / unverified / mismatch (see
verdict.py) — with its reasons, the matched work, and ``is_retracted`` so a
retracted paper is never cited unflagged. A DOI in any common spelling is
normalised first; one that is no DOI at all is refused as an invalid argument.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, field_validator, model_validator

from services.worker.tools.base import Tool, ToolContext, ToolEffect, ToolResult
from services.worker.tools.papers.openalex import OpenAlex, normalise_doi
from services.worker.tools.papers.verdict import Claim, Verdict, judge_doi_hit, judge_title_hits
from services.worker.tools.web.settings import ResearchToolSettings

CANDIDATES = 5


class PaperValidateArgs(BaseModel):
    title: str | None = Field(default=None, max_length=1000, description="the cited title")
    doi: str | None = Field(default=None, max_length=300, description="any spelling of a DOI")
    authors: list[str] = Field(
        default_factory=list, max_length=100, description="cited author names (any order)"
    )
    year: int | None = Field(default=None, ge=1500, le=2100, description="cited year")

    @field_validator("doi")
    @classmethod
    def _a_doi(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        doi = normalise_doi(value)
        if doi is None:
            raise ValueError(f"{value!r} is not a DOI (expected 10.<registrant>/<suffix>)")
        return doi

    @model_validator(mode="after")
    def _something_to_check(self) -> PaperValidateArgs:
        if not self.doi and not (self.title and self.title.strip()):
            raise ValueError("give a title or a doi to validate")
        return self


class PaperValidateTool(Tool[PaperValidateArgs]):
    name = "paper_validate"
    description = (
        "Check a citation against OpenAlex: verdict confirmed / partial / unverified / "
        "mismatch with reasons, the matched work, and whether it is retracted."
    )
    args_model = PaperValidateArgs
    effect = ToolEffect.READ_ONLY
    retry_safe = True
    timeout_s = 60.0

    def __init__(self, settings: ResearchToolSettings) -> None:
        self._openalex = OpenAlex(settings)

    def run(self, args: PaperValidateArgs, ctx: ToolContext) -> ToolResult:
        claim = Claim(title=args.title, doi=args.doi, authors=args.authors, year=args.year)
        verdict = self._judge(claim)
        retracted = bool(verdict.work and verdict.work.is_retracted)
        if retracted:
            verdict.reasons.append("the work is RETRACTED: do not cite it as valid evidence")
        data: dict[str, Any] = {
            "verdict": verdict.verdict,
            "reasons": verdict.reasons,
            "is_retracted": retracted,
            "doi": claim.doi,
            "work": verdict.work.as_dict() if verdict.work else None,
        }
        lines = [f"verdict: {verdict.verdict}" + (" (RETRACTED)" if retracted else "")]
        lines += [f"- {reason}" for reason in verdict.reasons]
        if verdict.work is not None:
            lines.append(f"work: {verdict.work.line()}")
        return ToolResult("\n".join(lines), data)

    def _judge(self, claim: Claim) -> Verdict:
        if claim.doi:
            work = self._openalex.by_doi(claim.doi)
            if work is not None:
                return judge_doi_hit(claim, work)
            if not claim.title:
                return Verdict("unverified", [f"DOI {claim.doi} not found in OpenAlex"])
        assert claim.title
        candidates = self._openalex.search(claim.title, limit=CANDIDATES)
        return judge_title_hits(claim, candidates)
