"""Verify's model-independent half (services/worker/survey/support.py) on one claim:
per citation which checks passed; a source with no passage is never trusted."""

from __future__ import annotations

from services.worker.survey.support import NO_PASSAGE, check_support

PASSAGE = (
    "We assess the importance of an in-domain scientific vocabulary by repeating the "
    "finetuning experiments for SCIBERT. Averaged across datasets, we observe +0.60 F1 "
    "when using SCIVOCAB."
)
CLAIM = "An in-domain scientific vocabulary adds +0.60 F1 averaged across datasets [@a]."


class TestCheckSupport:
    def test_a_claim_from_its_passage_is_supported_with_each_check_recorded(self) -> None:
        support = check_support(CLAIM, {"a": [PASSAGE]}, model_verdict="supported", encoder=None)
        assert support["supported"] is True
        assert support["citations"]["a"]["checks"] == {
            "lexical": True,
            "numbers": True,
            "terms": True,
            "model": True,
        }

    def test_the_model_saying_supported_does_not_keep_an_unrelated_citation(self) -> None:
        support = check_support(
            "Quantum annealing answers every literature question [@a].",
            {"a": [PASSAGE]},
            model_verdict="supported",
            encoder=None,
        )
        assert support["supported"] is False
        assert "shares no content word" in support["reason"]

    def test_a_metadata_only_source_is_flagged_even_beside_a_supporting_one(self) -> None:
        support = check_support(
            CLAIM, {"a": [PASSAGE], "b": []}, model_verdict="supported", encoder=None
        )
        assert support["supported"] is False
        assert support["citations"]["b"] == {
            "supported": False,
            "score": 0.0,
            "checks": {},
            "reason": NO_PASSAGE,
        }
        assert f"b: {NO_PASSAGE}" in support["reason"]
        assert support["citations"]["a"]["supported"] is True
