"""The model-independent claim checker (services/common/claims): each rule on real
sentences (SciBERT's and SciFact-style text), lexical-only and with the packaged
MiniLM embedder handed in through the library's operator entry point."""

from __future__ import annotations

import numpy as np
import pytest

from services.common.claims import Encoder, check_claim, check_claims
from services.library.operator import claim_encoder

PASSAGE = (
    "We assess the importance of an in-domain scientific vocabulary by repeating the "
    "finetuning experiments for SCIBERT with BASEVOCAB. Averaged across datasets, we "
    "observe +0.60 F1 when using SCIVOCAB."
)
SUPPORTED = "An in-domain scientific vocabulary (SCIVOCAB) adds 0.60 F1 averaged across datasets."
UNRELATED = "Quantum annealing answers every literature question."


class SameVector:
    """An embedding that calls every pair identical (cosine 1): what a paraphrase with
    no word in common looks like to the embedding check."""

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), 4), dtype=np.float32) / 2.0


class TestContentOverlap:
    def test_a_claim_taken_from_its_passage_is_supported(self) -> None:
        verdict = check_claim(SUPPORTED, PASSAGE)
        assert verdict.supported, verdict
        assert verdict.passed() == {"lexical": True, "numbers": True, "terms": True}
        assert 0.0 <= verdict.score <= 1.0
        assert verdict.mode == "lexical-only"  # no encoder given: said, not hidden

    def test_a_paraphrase_sharing_its_content_is_supported(self) -> None:
        paraphrase = "Using SCIVOCAB, the scientific vocabulary, improves F1 by 0.60 on average."
        verdict = check_claim(paraphrase, PASSAGE, model_verdict="supported")
        assert verdict.supported, verdict

    def test_a_claim_citing_an_unrelated_passage_is_flagged(self) -> None:
        other = (
            "The Roman legions crossed the Rhine in the spring, and the emperor's "
            "chroniclers recorded the campaign in detail."
        )
        verdict = check_claim(SUPPORTED, other, model_verdict="supported")
        assert not verdict.supported and verdict.score < 0.3, verdict

    def test_a_claim_sharing_no_content_is_unsupported_whatever_the_model_says(self) -> None:
        verdict = check_claim(UNRELATED, PASSAGE, model_verdict="supported")
        assert not verdict.supported
        assert verdict.passed()["lexical"] is False and verdict.passed()["model"] is True
        assert "shares no content word" in verdict.reason

    def test_no_shared_word_is_unsupported_even_when_the_embedding_calls_it_similar(
        self,
    ) -> None:
        verdict = check_claim(UNRELATED, PASSAGE, encoder=SameVector(), model_verdict="supported")
        assert verdict.passed()["embedding"] is True
        assert not verdict.supported, verdict


class TestModelIsOneInput:
    def test_the_model_can_withdraw_support(self) -> None:
        verdict = check_claim(SUPPORTED, PASSAGE, model_verdict="unsupported")
        assert not verdict.supported
        assert verdict.passed()["model"] is False
        assert "the model judged it unsupported" in verdict.reason

    def test_partially_supported_keeps_a_claim_the_checks_support(self) -> None:
        assert check_claim(SUPPORTED, PASSAGE, model_verdict="partially_supported").supported


class TestAgreement:
    def test_a_number_the_passage_does_not_state_fails_the_number_check(self) -> None:
        right = check_claim("SCIVOCAB adds 0.60 F1 averaged across datasets.", PASSAGE)
        wrong = check_claim("SCIVOCAB adds 10 F1 averaged across datasets.", PASSAGE)
        assert right.passed()["numbers"] and not wrong.passed()["numbers"]
        assert wrong.score < right.score
        numbers = next(c for c in wrong.checks if c.name == "numbers")
        assert "10" in numbers.detail

    def test_a_term_the_passage_never_names_fails_the_term_check(self) -> None:
        verdict = check_claim("BRCA1 vocabulary adds F1 averaged across datasets.", PASSAGE)
        terms = next(c for c in verdict.checks if c.name == "terms")
        assert not terms.passed and "brca1" in terms.detail

    def test_ligatures_and_inflections_meet(self) -> None:
        passage = "The eﬃcient ﬁnetuning experiment."
        verdict = check_claim("Efficient finetuning experiments.", passage)
        assert next(c for c in verdict.checks if c.name == "lexical").value == 1.0


@pytest.fixture(scope="module")
def encoder() -> Encoder:
    loaded = claim_encoder()
    assert loaded is not None, "the packaged MiniLM should load in the test venv"
    return loaded


class TestEmbedding:
    def test_the_packaged_minilm_separates_related_from_unrelated(self, encoder: Encoder) -> None:
        related, unrelated = check_claims(
            [(SUPPORTED, PASSAGE), (UNRELATED, PASSAGE)], encoder=encoder
        )
        cosine = {
            "related": next(c for c in related.checks if c.name == "embedding"),
            "unrelated": next(c for c in unrelated.checks if c.name == "embedding"),
        }
        assert cosine["related"].passed and not cosine["unrelated"].passed
        assert related.supported and not unrelated.supported

    def test_without_an_encoder_no_embedding_check_runs(self) -> None:
        assert "embedding" not in check_claim(SUPPORTED, PASSAGE).passed()

    def test_with_an_encoder_the_verdict_says_combined(self, encoder: Encoder) -> None:
        verdict = check_claim(SUPPORTED, PASSAGE, encoder=encoder)
        assert verdict.mode == "combined" and verdict.as_dict()["mode"] == "combined"
