"""Stage verify: every cited claim checked, per section, in parallel.

A paragraph that cites is a claim. First each key must resolve (citations.py):
a key that does not (a deleted document, a paper never gathered) fails the claim
at once, without asking the model, and so does a key whose library document is
marked retracted (its check ``not_retracted`` fails). Claims whose keys all resolve go to the model
with the source passages their notes point at, and through the model-independent
checks (support.py): a claim stays in the text only when those checks support
it, the model's verdict being one input — a model that calls an unrelated
passage "supported" does not keep the claim. Moved claims are listed under
"Needs checking" with the reason — never cited silently — and every claim
records, per citation, which checks passed (the report's "Citation checks").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from services.worker.survey.citations import resolving, retracted_keys
from services.worker.survey.context import SurveyContext
from services.worker.survey.keys import conversation, item_key, stage_key
from services.worker.survey.parallel import run_bounded
from services.worker.survey.schemas import verify_schema
from services.worker.survey.structured import Ask, Spent
from services.worker.survey.support import ClaimChecker, check_section

VERIFY_PARALLELISM = 4
SOURCE_CHARS = 1200
SYSTEM = (
    "You check a survey's claims against their sources. For each claim say whether the "
    "source passages support it: supported, partially_supported or unsupported."
)


def run_verify(
    ctx: SurveyContext,
    sections: list[dict[str, Any]],
    papers: dict[str, dict[str, Any]],
    notes: dict[str, dict[str, Any]],
    should_stop: Callable[[], bool],
) -> list[dict[str, Any]] | None:
    key = stage_key("verify")
    done = ctx.result(key)
    if done is not None:
        return list(done["sections"])
    todo = [i for i in range(len(sections)) if ctx.result(item_key("verify", str(i))) is None]
    ctx.report(stage="verify")

    def verify_one(index: int) -> None:
        result, spent = _verify_section(ctx, index, sections[index], papers, notes)
        ctx.done(item_key("verify", str(index)), stage="verify", result=result, spent=spent)

    if not run_bounded(todo, verify_one, limit=VERIFY_PARALLELISM, should_stop=should_stop):
        return None
    checked: list[dict[str, Any]] = [
        ctx.result(item_key("verify", str(i))) for i in range(len(sections))
    ]
    ctx.done(key, stage="verify", result={"sections": checked})
    return checked


def _verify_section(
    ctx: SurveyContext,
    index: int,
    section: dict[str, Any],
    papers: dict[str, dict[str, Any]],
    notes: dict[str, dict[str, Any]],
) -> tuple[dict[str, Any], Spent]:
    paragraphs = section["paragraphs"]
    all_keys = {k for p in paragraphs for k in p["keys"]}
    with ctx.deps.factory() as db:
        why = resolving(db, papers, all_keys)
        retracted = retracted_keys(db, papers, all_keys)
    kept: list[dict[str, Any] | None] = list(paragraphs)
    moved: list[dict[str, Any]] = []
    claims: dict[str, int] = {}
    for n, para in enumerate(paragraphs):
        bad = [k for k in para["keys"] if why.get(k)]
        withdrawn = [k for k in para["keys"] if k in retracted and not why.get(k)]
        if bad or withdrawn:
            item = _moved(section, para, _unusable_reason(why, bad, withdrawn), bad)
            moved.append({**item, "support": _unresolved_support(para, why, retracted)})
            kept[n] = None
        elif para["keys"]:
            claims[f"c{len(claims) + 1}"] = n
    spent = Spent()
    verdicts: dict[str, Any] = {}
    checks: dict[str, Any] = {}
    if claims:
        ask = Ask(
            name="survey_verify",
            schema=verify_schema(list(claims)),
            system=SYSTEM,
            user=_claims_prompt(claims, paragraphs, papers, notes),
            conversation_key=conversation(ctx.job.session_id, "verify", str(index)),
        )
        data, spent = ctx.caller.ask(ask)
        verdicts = data["verdicts"]
        checker = ClaimChecker(ctx.deps.library, str(ctx.job.user_id))
        supports = check_section(
            [
                (
                    paragraphs[n]["text"],
                    {
                        k: [s["text"] for s in source_passages(k, papers, notes)]
                        for k in paragraphs[n]["keys"]
                    },
                    verdicts[cid]["verdict"],
                )
                for cid, n in claims.items()
            ],
            checker,
        )
        for (cid, n), support in zip(claims.items(), supports, strict=True):
            verdict, para = verdicts[cid], paragraphs[n]
            checks[cid] = support
            if not support["supported"]:
                reason = f"not supported by its source ({support['reason']})"
                if verdict["verdict"] == "unsupported" and verdict.get("reason"):
                    reason += f"; the model: {verdict['reason']}"
                moved.append({**_moved(section, para, reason, []), "support": support})
                kept[n] = None
            else:
                kept[n] = {**para, "support": support}
    result = {
        "title": section["title"],
        "written_by": section.get("written_by", []),
        "paragraphs": [p for p in kept if p is not None],
        "needs_checking": moved,
        "verdicts": verdicts,
        "checks": checks,
        "verified_by": sorted(set(spent.models)),
    }
    return result, spent


RETRACTED = "its library document is marked retracted"


def _unusable_reason(why: dict[str, str | None], bad: list[str], withdrawn: list[str]) -> str:
    parts = []
    if bad:
        parts.append("citation does not resolve (" + "; ".join(f"{k}: {why[k]}" for k in bad) + ")")
    if withdrawn:
        parts.append(
            "cites a retracted paper (" + "; ".join(f"{k}: {RETRACTED}" for k in withdrawn) + ")"
        )
    return "; ".join(parts)


def _unresolved_support(
    para: dict[str, Any], why: dict[str, str | None], retracted: set[str]
) -> dict[str, Any]:
    """The support record of a claim with a key that does not resolve or is
    retracted: never checked against text, each such key failing its check with
    why (a deleted document, a retraction ...)."""

    def checks(key: str) -> dict[str, bool]:
        if why.get(key):
            return {"resolves": False}
        return {"resolves": True, "not_retracted": key not in retracted}

    return {
        "supported": False,
        "score": 0.0,
        "reason": "citation does not resolve"
        if any(why.get(k) for k in para["keys"])
        else "cites a retracted paper",
        "mode": "not checked",
        "fallback": None,
        "citations": {
            k: {
                "supported": False,
                "score": 0.0,
                "checks": checks(k),
                "reason": why.get(k) or (RETRACTED if k in retracted else ""),
            }
            for k in para["keys"]
        },
    }


def _moved(
    section: dict[str, Any], para: dict[str, Any], reason: str, bad: list[str]
) -> dict[str, Any]:
    return {
        "section": section["title"],
        "text": para["text"],
        "keys": para["keys"],
        "unresolved_keys": bad,
        "reason": reason,
    }


def _claims_prompt(
    claims: dict[str, int],
    paragraphs: list[dict[str, Any]],
    papers: dict[str, dict[str, Any]],
    notes: dict[str, dict[str, Any]],
) -> str:
    lines = []
    for cid, n in claims.items():
        para = paragraphs[n]
        lines.append(f"Claim {cid}: {para['text']}")
        for key in para["keys"]:
            for source in source_passages(key, papers, notes):
                lines.append(f"  source [{key}] ({source['locator']}): {source['text']}")
    return "\n".join(lines)


def source_passages(
    key: str, papers: dict[str, dict[str, Any]], notes: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    """The passages a key's note points at (its locators' chunks); none for a key no
    paper was gathered for — such a key never resolves (``citations.resolving``), and
    should one slip through, the claim goes unsupported rather than the survey crash."""
    paper = papers.get(key) or {}
    chunks = {c["chunk_id"]: c for c in paper.get("chunks", [])}
    note = notes.get(key) or {"locators": []}
    wanted = [loc["chunk_id"] for loc in note["locators"]] or list(chunks)[:1]
    return [
        {"locator": chunks[c].get("locator"), "text": chunks[c]["text"][:SOURCE_CHARS]}
        for c in dict.fromkeys(wanted)
        if c in chunks
    ]
