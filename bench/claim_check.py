"""Unsupported-claim detection on SciFact train pairs: precision and recall of the
"unsupported" flag, per checker (services/common/claims), against same-run baselines.

Pairs from the shared SciFact train claims (../shared/data/scifact, BEIR):
- cited: a claim with an abstract its qrels name as evidence (should be supported);
- unrelated: the claim with a random other abstract (seeded; should be flagged);
- near: the claim with the most word-sharing non-evidence abstract among 200 random
  ones (same seed; a BM25-like hard negative: on topic, but not the evidence).

Checkers: lexical, numbers, terms, embedding (the packaged MiniLM through the
library's embedder, services.library.operator.claim_encoder), combined (the
verdict verify uses), the simulator as the "model" (its auto-mode reply to the
verify request, in process) and the baselines "always flag" / "random 50%".
Only the abstracts the pairs use are embedded (each once).
The shared copy is BEIR's: its qrels mark evidence without SciFact's
SUPPORT / CONTRADICT label, so "cited" mixes both and CONTRADICT cannot be
reported apart (stated in the output). The combined threshold is chosen on the
calibration half of the claims (seeded split) and every figure is reported on
the other half.

    .venv/bin/python -m bench.claim_check [--lexical-only] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from services.common.claims import check_claims
from services.common.claims.embedding import Encoder
from services.common.claims.words import content_stems

ROOT = Path(__file__).resolve().parents[1]
# The shared data sit beside the checkout (/work/main → /work/shared) or beside
# the worktrees' folder (/work/wt/claims → /work/shared); LEAFLAB_SHARED_DATA wins.
DATA = next(
    (
        d / "scifact"
        for d in (
            Path(os.environ.get("LEAFLAB_SHARED_DATA", ROOT.parent / "shared" / "data")),
            ROOT.parent.parent / "shared" / "data",
        )
        if (d / "scifact").is_dir()
    ),
    ROOT.parent / "shared" / "data" / "scifact",
)
SEED = 28
CHECKERS = ("lexical", "numbers", "terms", "embedding", "combined", "model")


class MemoEncoder:
    """Each distinct text encoded once across the run (abstracts recur in pairs)."""

    def __init__(self, inner: Encoder) -> None:
        self.inner = inner
        self.memo: dict[str, np.ndarray] = {}

    def encode(self, texts: list[str]) -> np.ndarray:
        todo = list(dict.fromkeys(t for t in texts if t not in self.memo))
        if todo:
            for text, vec in zip(todo, self.inner.encode(todo), strict=True):
                self.memo[text] = vec
        return np.stack([self.memo[t] for t in texts])


def _load(data: Path) -> tuple[dict[str, str], dict[str, str], dict[str, set[str]]]:
    claims = {}
    for line in (data / "queries.jsonl").read_text().splitlines():
        row = json.loads(line)
        claims[row["_id"]] = row["text"]
    corpus = {}
    for line in (data / "corpus.jsonl").read_text().splitlines():
        row = json.loads(line)
        corpus[row["_id"]] = f"{row['title']}. {row['text']}"
    qrels: dict[str, set[str]] = defaultdict(set)
    for line in (data / "qrels.tsv").read_text().splitlines()[1:]:
        qid, did, _ = line.split("\t")
        qrels[qid].add(did)
    return claims, corpus, qrels


def build_pairs(
    claims: dict[str, str], corpus: dict[str, str], qrels: dict[str, set[str]], limit: int | None
) -> list[dict[str, Any]]:
    rng = random.Random(SEED)
    ids = sorted(corpus)
    qids = sorted(q for q in qrels if q in claims)
    rng.shuffle(qids)
    qids = qids[:limit] if limit else qids
    stems = {d: content_stems(t) for d, t in corpus.items()}
    pairs = []
    for n, qid in enumerate(qids):
        half = "calibrate" if n % 2 == 0 else "report"
        claim = claims[qid]
        for did in sorted(qrels[qid]):
            pairs.append({"half": half, "kind": "cited", "claim": claim, "passage": corpus[did]})
        others = [d for d in rng.sample(ids, 201) if d not in qrels[qid]]
        pairs.append(
            {"half": half, "kind": "unrelated", "claim": claim, "passage": corpus[others[0]]}
        )
        want = content_stems(claim)
        near = max(others[1:], key=lambda d: (len(want & stems[d]), d))
        pairs.append({"half": half, "kind": "near", "claim": claim, "passage": corpus[near]})
    return pairs


def _combined_flag(pair: dict[str, Any], bar: float) -> bool:
    """The combined rule of services/common/claims/combine.py at threshold ``bar``."""
    return not pair["content"] or not pair["numbers_ok"] or pair["score"] < bar


def simulator_verdict(claim: str, passage: str) -> str:
    """What the simulator (auto mode) answers to verify's request for this pair."""
    from services.model_sim.auto.reply import auto_reply
    from services.worker.survey.schemas import verify_schema
    from services.worker.survey.verify import SOURCE_CHARS, SYSTEM

    body = {
        "model": "leaflab-sim",
        "messages": [
            {"role": "system", "content": SYSTEM},
            {
                "role": "user",
                "content": f"Claim c1: {claim}\n  source [k] (p. 1): {passage[:SOURCE_CHARS]}",
            },
        ],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "survey_verify", "schema": verify_schema(["c1"])},
        },
    }
    reply = auto_reply(body)
    return str(json.loads(reply.content or "{}")["verdicts"]["c1"]["verdict"])


def prf(flags: list[bool], wrong: list[bool]) -> dict[str, float]:
    """Precision / recall of the flag at finding the pairs that should be flagged."""
    hit = sum(f and w for f, w in zip(flags, wrong, strict=True))
    flagged, total = sum(flags), sum(wrong)
    return {
        "precision": round(hit / flagged, 3) if flagged else 0.0,
        "recall": round(hit / total, 3) if total else 0.0,
        "flagged": flagged,
    }


def calibrate(scores: list[float], wrong: list[bool]) -> float:
    """The threshold with the best balanced accuracy (flag = score below it): F1 would
    reward flagging most cited pairs, since two of every three pairs are negatives."""
    best, best_j = 0.5, -1.0
    bad = sum(wrong) or 1
    good = (len(wrong) - sum(wrong)) or 1
    for bar in np.arange(0.2, 0.8, 0.01):
        flags = [s < bar for s in scores]
        tpr = sum(f and w for f, w in zip(flags, wrong, strict=True)) / bad
        fpr = sum(f and not w for f, w in zip(flags, wrong, strict=True)) / good
        if tpr - fpr > best_j:
            best, best_j = float(round(bar, 2)), tpr - fpr
    return best


def _table(name: str, rows: dict[str, dict[str, float]]) -> None:
    print(f"\n{name}")
    print(f"  {'checker':<22}{'precision':>10}{'recall':>8}{'flagged':>9}")
    for checker, m in rows.items():
        print(f"  {checker:<22}{m['precision']:>10.3f}{m['recall']:>8.3f}{m['flagged']:>9}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--limit", type=int, default=None, help="use at most N claims")
    parser.add_argument("--lexical-only", action="store_true")
    args = parser.parse_args()
    claims, corpus, qrels = _load(args.data.resolve())
    pairs = build_pairs(claims, corpus, qrels, args.limit)
    from services.library.operator import claim_encoder

    encoder = None if args.lexical_only else claim_encoder()
    memo = MemoEncoder(encoder) if encoder is not None else None
    started = time.perf_counter()
    verdicts = check_claims([(p["claim"], p["passage"]) for p in pairs], encoder=memo)
    elapsed = time.perf_counter() - started
    sim_started = time.perf_counter()
    model = [simulator_verdict(p["claim"], p["passage"]) for p in pairs]
    sim_elapsed = time.perf_counter() - sim_started
    for pair, verdict, said in zip(pairs, verdicts, model, strict=True):
        pair["score"] = verdict.score
        pair["checks"] = {**verdict.passed(), "model": said != "unsupported"}
        pair["content"] = next(c.value for c in verdict.checks if c.name == "lexical") > 0
        pair["numbers_ok"] = verdict.passed()["numbers"]
    cal = [p for p in pairs if p["half"] == "calibrate"]
    bar = calibrate([p["score"] for p in cal], [p["kind"] != "cited" for p in cal])
    print(f"pairs: {len(pairs)} ({len(cal)} calibrate), claims: {len({p['claim'] for p in pairs})}")
    print(f"embedding: {'on' if memo else 'off'}; checked in {elapsed:.1f} s", end="")
    print(f" ({len(memo.memo) if memo else 0} distinct texts embedded)")
    print(f"simulator verdicts (in process): {sim_elapsed:.1f} s")
    print(f"combined threshold chosen on the calibration half: {bar:.2f}")
    rep = [p for p in pairs if p["half"] == "report"]
    rng = random.Random(SEED)
    for negatives in (("unrelated",), ("near",), ("unrelated", "near")):
        rows = [p for p in rep if p["kind"] in ("cited", *negatives)]
        wrong = [p["kind"] != "cited" for p in rows]
        table: dict[str, dict[str, float]] = {}
        for checker in CHECKERS:
            if checker == "combined":
                flags = [_combined_flag(p, bar) for p in rows]
            elif checker in rows[0]["checks"]:
                flags = [not p["checks"][checker] for p in rows]
            else:
                continue
            table[checker] = prf(flags, wrong)
        cited = [p for p in rows if p["kind"] == "cited"]
        kept = sum(not _combined_flag(p, bar) for p in cited)
        print(f"\ncited pairs the combined check keeps: {kept}/{len(cited)}", end="")
        table["baseline: always flag"] = prf([True] * len(rows), wrong)
        table["baseline: random 50%"] = prf([rng.random() < 0.5 for _ in rows], wrong)
        _table(f"report half, cited vs {' + '.join(negatives)} ({len(rows)} pairs)", table)
    print("\nmodel = the simulator's auto-mode verdict (a schema filler, not a judgment);")
    print("CONTRADICT apart: not measurable (the shared BEIR qrels carry no labels).")


if __name__ == "__main__":
    main()
