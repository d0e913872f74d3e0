"""What calls cost, and where prices come from."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from services.worker.llm.pricing import ModelPrice, PriceBook, cost_usd, worst_case_usd
from services.worker.llm.settings import LlmSettings
from services.worker.llm.types import Usage

PRICE = ModelPrice(input_per_mtok=2.0, output_per_mtok=8.0, cached_per_mtok=0.5)


class TestCost:
    def test_cached_tokens_are_billed_at_the_cache_price(self) -> None:
        usage = Usage(input_tokens=1_000_000, output_tokens=500_000, cached_tokens=400_000)
        # 600k fresh × 2 + 400k cached × 0.5 + 500k out × 8
        assert cost_usd(usage, PRICE) == pytest.approx(1.2 + 0.2 + 4.0)

    def test_cached_never_exceeds_input(self) -> None:
        usage = Usage(input_tokens=100, output_tokens=0, cached_tokens=500)
        assert cost_usd(usage, PRICE) == pytest.approx(100 * 0.5 / 1e6)

    def test_worst_case_assumes_no_cache_and_full_output(self) -> None:
        assert worst_case_usd(input_tokens=1000, max_tokens=2000, price=PRICE) == pytest.approx(
            (1000 * 2.0 + 2000 * 8.0) / 1e6
        )


class TestPriceBook:
    def test_unpriced_self_hosted_model_is_not_free(self) -> None:
        book = PriceBook()
        assert book.cost_usd("qwen3-32b", Usage(input_tokens=1000, output_tokens=1000)) > 0

    def test_prices_from_env(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("LEAFLAB_MODEL_PRICES", '{"Qwen/Qwen3-32B": [0.1, 0.3, 0.01]}')
        monkeypatch.setenv("LEAFLAB_DEFAULT_MODEL_PRICE", "[1, 2, 0.5]")
        book = PriceBook.from_settings(LlmSettings())
        assert book.price_for("qwen/qwen3-32b") == ModelPrice(0.1, 0.3, 0.01)
        assert book.price_for("other") == ModelPrice(1, 2, 0.5)

    def test_bare_name_matches_an_org_prefixed_request(self) -> None:
        book = PriceBook({"qwen3-32b": PRICE})
        assert book.price_for("Qwen/Qwen3-32B") == PRICE

    @pytest.mark.parametrize(
        "value", ['{"m": [1, 2]}', '{"m": [-1, 2, 3]}', "not json", '{"m": "cheap"}']
    )
    def test_bad_price_config_is_refused(self, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
        monkeypatch.setenv("LEAFLAB_MODEL_PRICES", value)
        with pytest.raises((ValidationError, ValueError)):
            LlmSettings()
