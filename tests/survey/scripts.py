"""Simulator scripts that play a whole survey over the package's three PDFs.

Until the simulator's auto mode lands these stand in for it: one script per
conversation key the worker uses (``<session>:survey:<stage>[:<item>]``).
They include a plan reply that needs the repair retry, a claim the verifier
judges unsupported, a fabricated citation (``smith2099quantum``), a claim taken
from its cited passage (SciBERT's vocabulary result) and a claim the model calls
supported whose cited passages share no word with it (survey searches leave
reference lists out, so the claim is one no passage of the three papers speaks of).
"""

from __future__ import annotations

import json
from typing import Any

from services.worker.survey.citations import guess_year, make_key
from services.worker.survey.keys import conversation

FABRICATED = "smith2099quantum"
UNSUPPORTED_CLAIM = "Every scientific language model is trained on chemistry patents"
FABRICATED_CLAIM = "Quantum annealing answers every literature question"
# The model says "supported"; no word of it is in any of the three papers, so
# whichever passages gather picks, they share nothing with it.
UNRELATED_CLAIM = "Glaciers calve icebergs beneath auroras"
SUPPORTED_CLAIM = "An in-domain scientific vocabulary adds +0.60 F1 averaged across datasets"


def expected_keys(documents: list[dict[str, Any]]) -> list[str]:
    """The keys gather gives the documents (titles in order; authors and year from the
    document's metadata, the year from the file name when it has none)."""
    taken: set[str] = set()
    ordered = sorted(documents, key=lambda d: (d["title"] or d["filename"]).strip().lower())
    return [
        make_key(
            title=(d["title"] or d["filename"]).strip(),
            authors=list(d.get("authors") or []),
            year=d.get("year") or guess_year(d["filename"]),
            taken=taken,
        )
        for d in ordered
    ]


def _reply(data: dict[str, Any]) -> dict[str, Any]:
    return {"content": json.dumps(data)}


def survey_scripts(
    session_id: str,
    keys: list[str],
    *,
    latency_ms: int = 10,
    read_latency_ms: dict[str, int] | None = None,
) -> dict[str, dict[str, Any]]:
    """conversation key → script; ``read_latency_ms`` maps a paper key to its read's latency."""
    k0, k1, k2 = keys
    plan = {
        "research_questions": ["How are language models adapted to scientific text?"],
        "search_queries": ["scientific language model", "question answering over papers"],
    }
    scripts: dict[str, dict[str, Any]] = {
        conversation(session_id, "plan"): {
            "latency_ms": latency_ms,
            # Not JSON: the stage sends the error back once and gets the plan.
            "replies": [{"content": "Here is my plan: read papers."}, _reply(plan)],
        }
    }
    for key in keys:
        note = {
            "key": key,
            "problem": f"problem studied in {key}",
            "method": f"method of {key}",
            "assumptions": "a large text corpus",
            "results": f"results reported by {key}",
            "limitations": "English only",
            "locators": [{"chunk_id": "c1", "evidence": f"evidence from {key}"}],
        }
        scripts[conversation(session_id, "read", key)] = {
            "latency_ms": (read_latency_ms or {}).get(key, latency_ms),
            "replies": [_reply(note)],
        }
    outline = {
        "sections": [
            {"title": "Models for scientific text", "purpose": "models", "keys": [k0, k1]},
            {"title": "Answering questions over papers", "purpose": "qa", "keys": [k1, k2]},
        ]
    }
    scripts[conversation(session_id, "outline")] = {
        "latency_ms": latency_ms,
        "replies": [_reply(outline)],
    }
    sections = [
        [
            # LaTeX specials in model prose: the .tex must still compile.
            {
                "text": f"{SUPPORTED_CLAIM} for SCIBERT_base & #vocab finetuning [@{k0}].",
                "keys": [k0],
            },
            {"text": f"{UNSUPPORTED_CLAIM} [@{k1}].", "keys": [k1]},
        ],
        [
            {"text": f"{UNRELATED_CLAIM} [@{k1}; @{k2}].", "keys": [k1, k2]},
            {"text": f"{FABRICATED_CLAIM} [@{FABRICATED}].", "keys": []},
        ],
    ]
    verdicts = [
        {
            "c1": {"verdict": "supported", "reason": "the passage says so"},
            "c2": {"verdict": "unsupported", "reason": "no passage mentions patents"},
        },
        {"c1": {"verdict": "supported", "reason": "both passages say so"}},
    ]
    for index, paragraphs in enumerate(sections):
        scripts[conversation(session_id, "write", str(index))] = {
            "latency_ms": latency_ms,
            "replies": [_reply({"paragraphs": paragraphs})],
        }
        scripts[conversation(session_id, "verify", str(index))] = {
            "latency_ms": latency_ms,
            "replies": [_reply({"verdicts": verdicts[index]})],
        }
    return scripts


def plain_survey_scripts(
    session_id: str, keys: list[str], *, sections: int, latency_ms: int
) -> dict[str, dict[str, Any]]:
    """Scripts for a survey over any number of papers, every claim supported (the
    benchmark's): each section cites a rotating pair of keys."""
    plan = {"research_questions": ["What is known?"], "search_queries": ["methods", "results"]}
    scripts: dict[str, dict[str, Any]] = {
        conversation(session_id, "plan"): {"latency_ms": latency_ms, "replies": [_reply(plan)]}
    }
    for key in keys:
        note = {
            "key": key,
            **{f: f"{f} of {key}" for f in ("problem", "method", "assumptions", "results")},
            "limitations": "none stated",
            "locators": [{"chunk_id": "c1", "evidence": f"evidence from {key}"}],
        }
        scripts[conversation(session_id, "read", key)] = {
            "latency_ms": latency_ms,
            "replies": [_reply(note)],
        }
    chosen = [[keys[(2 * i + j) % len(keys)] for j in range(2)] for i in range(sections)]
    outline = {
        "sections": [
            {"title": f"Section {i + 1}", "purpose": "p", "keys": pair}
            for i, pair in enumerate(chosen)
        ]
    }
    scripts[conversation(session_id, "outline")] = {
        "latency_ms": latency_ms,
        "replies": [_reply(outline)],
    }
    for i, pair in enumerate(chosen):
        paragraphs = [{"text": f"Finding of {k} [@{k}].", "keys": [k]} for k in pair]
        verdicts = {f"c{n + 1}": {"verdict": "supported", "reason": "ok"} for n in range(2)}
        scripts[conversation(session_id, "write", str(i))] = {
            "latency_ms": latency_ms,
            "replies": [_reply({"paragraphs": paragraphs})],
        }
        scripts[conversation(session_id, "verify", str(i))] = {
            "latency_ms": latency_ms,
            "replies": [_reply({"verdicts": verdicts})],
        }
    return scripts
