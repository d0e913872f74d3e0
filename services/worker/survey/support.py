"""The model-independent half of verify: each cited claim against its cited passages.

For every claim that cites, each key's passages (the chunks its note points at)
are checked with the claim checker (services.common.claims), the model's
verdict being one input: it can withdraw support, never grant it. The checks
run on the library service (``POST /claims/check``, with the library's
embedder); when the library is not configured or does not answer, they run
here lexical-only, and every result says which (``mode``, ``fallback``).

A key with no passage to check against fails its check, so the claim is
flagged rather than trusted. A claim is supported only when the checks
support it against all its keys' passages together and no key's passages
share nothing with it (one unrelated citation beside a good one is flagged).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import httpx

from services.common.claims import check_claims
from services.common.telemetry import inject_carrier
from services.worker.survey.citations import strip_citations
from services.worker.tools.ports import LibraryEndpoint

log = logging.getLogger(__name__)

NO_PASSAGE = "no passage of this source to check against (metadata-only or unknown document)"
# The library route's own bounds (services/library/routes/claims.py): stay inside them.
BATCH = 100
CLAIM_CHARS = 4_000
PASSAGE_CHARS = 20_000
TIMEOUT_S = 60


@dataclass
class Checked:
    """Verdict dicts (ClaimVerdict.as_dict) in input order, how they were made and,
    when the library could not be used, why."""

    verdicts: list[dict[str, Any]]
    mode: str
    fallback: str | None = None


class ClaimChecker:
    """Checks (claim, passage, model verdict) triples on the library, or locally."""

    def __init__(self, library: LibraryEndpoint | None, user_id: str) -> None:
        self.library = library
        self.user_id = user_id

    def check(self, triples: list[tuple[str, str, str | None]]) -> Checked:
        if not triples:
            return Checked([], "combined")
        if self.library is None:
            return self._local(triples, "the library service is not configured")
        try:
            return self._remote(self.library, triples)
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
            log.warning("claim check on the library failed, running lexical-only: %s", exc)
            return self._local(triples, f"the library service did not answer ({exc})")

    def _local(self, triples: list[tuple[str, str, str | None]], why: str) -> Checked:
        verdicts = check_claims(
            [(c, p) for c, p, _ in triples], encoder=None, model_verdicts=[m for *_, m in triples]
        )
        return Checked([v.as_dict() for v in verdicts], "lexical-only", why)

    def _remote(
        self, library: LibraryEndpoint, triples: list[tuple[str, str, str | None]]
    ) -> Checked:
        headers = {
            "X-Leaflab-Internal": str(library.internal_token),
            "X-Leaflab-User": self.user_id,
            **inject_carrier(),
        }
        out: list[dict[str, Any]] = []
        modes = set()
        for start in range(0, len(triples), BATCH):
            items = [
                {"claim": c[:CLAIM_CHARS], "passage": p[:PASSAGE_CHARS], "model_verdict": m}
                for c, p, m in triples[start : start + BATCH]
            ]
            resp = httpx.post(
                f"{library.url}/claims/check",
                json={"items": items},
                headers=headers,
                timeout=TIMEOUT_S,
            )
            if resp.status_code != 200:
                raise ValueError(f"HTTP {resp.status_code}: {resp.text[:200]}")
            body = resp.json()
            got = list(body["items"])
            if len(got) != len(items):
                raise ValueError(f"{len(got)} verdicts for {len(items)} pairs")
            out += got
            modes.add(str(body["mode"]))
        return Checked(out, "combined" if modes == {"combined"} else "lexical-only")


def _model_verdict(verdict: str | None) -> str | None:
    return verdict if verdict in ("supported", "partially_supported", "unsupported") else None


def check_section(
    claims: list[tuple[str, dict[str, list[str]], str | None]], checker: ClaimChecker
) -> list[dict[str, Any]]:
    """``claims``: (claim text, key → its passage texts, the model's verdict). One
    support record per claim (what verify stores and the report shows), all checked
    in one batch."""
    triples: list[tuple[str, str, str | None]] = []
    plans = []
    for text, passages, verdict in claims:
        claim = strip_citations(text) or text
        keyed = [k for k in passages if passages[k]]
        first = len(triples)
        model = _model_verdict(verdict)
        triples += [(claim, " ".join(passages[k]), model) for k in keyed]
        if keyed:
            triples.append((claim, " ".join(t for k in keyed for t in passages[k]), model))
        plans.append((passages, keyed, first))
    checked = checker.check(triples)
    return [_support(passages, keyed, checked, first) for passages, keyed, first in plans]


def _support(
    passages: dict[str, list[str]], keyed: list[str], checked: Checked, first: int
) -> dict[str, Any]:
    per_key: dict[str, dict[str, Any]] = {}
    unrelated = []
    for offset, key in enumerate(keyed):
        v = checked.verdicts[first + offset]
        lexical = [c for c in v["checks"] if c["name"] == "lexical"]
        if not lexical or float(lexical[0]["value"]) <= 0.0:
            unrelated.append(key)
        per_key[key] = {
            "supported": bool(v["supported"]),
            "score": float(v["score"]),
            "checks": {c["name"]: bool(c["passed"]) for c in v["checks"]},
            "reason": str(v["reason"]),
        }
    for key in passages:
        if not passages[key]:
            per_key[key] = {"supported": False, "score": 0.0, "checks": {}, "reason": NO_PASSAGE}
    missing = [k for k in passages if not passages[k]]
    whole = checked.verdicts[first + len(keyed)] if keyed else None
    reasons = [f"{k}: {NO_PASSAGE}" for k in missing]
    reasons += [f"{k}: its passages share no content word with the claim" for k in unrelated]
    if whole is None and not missing:
        reasons.append("the claim cites no source")
    if whole is not None and whole["reason"]:
        reasons.append(str(whole["reason"]))
    return {
        "supported": (
            whole is not None and bool(whole["supported"]) and not missing and not unrelated
        ),
        "score": round(float(whole["score"]), 4) if whole is not None else 0.0,
        "reason": "; ".join(reasons),
        "mode": checked.mode,
        "fallback": checked.fallback,
        "citations": {k: per_key[k] for k in passages},
    }
