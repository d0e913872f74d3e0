"""What calls cost, and where prices come from."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from services.worker.llm.pricing import ModelPrice, PriceBook, cost_usd, worst_case_usd
from services.worker.llm.settings import GpuPriceConfig, LlmSettings
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


class TestPriceSources:
    def test_gpu_derived_price(self, monkeypatch: pytest.MonkeyPatch) -> None:
        # 2 GPUs at $2.50/h make 1800 tokens/s together: $5/h / 3600 / 1800 per token.
        monkeypatch.setenv(
            "LEAFLAB_GPU_PRICING",
            '{"qwen3-32b": {"usd_per_gpu_hour": 2.5, "tokens_per_s": 1800, "gpus": 2,'
            ' "prefill_tokens_per_s": 18000}}',
        )
        price = PriceBook.from_settings(LlmSettings()).price_for("Qwen/Qwen3-32B")
        per_mtok = 5.0 / 3600 / 1800 * 1e6  # ≈ $0.77 per million generated tokens
        assert price.source == "gpu_derived"
        assert price.output_per_mtok == pytest.approx(per_mtok)
        assert price.input_per_mtok == pytest.approx(per_mtok / 10)
        assert price.cached_per_mtok == pytest.approx(per_mtok / 100)

    def test_a_self_hosted_call_costs_its_gpu_time(self) -> None:
        gpu = GpuPriceConfig(usd_per_gpu_hour=3.6, tokens_per_s=1000)
        # 1000 tokens out = 1 GPU-second = $0.001; input priced at the same rate.
        usage = Usage(input_tokens=1000, output_tokens=1000)
        assert cost_usd(usage, ModelPrice.from_gpu(gpu)) == pytest.approx(0.002)

    def test_configured_price_wins_and_every_row_says_its_source(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("LEAFLAB_MODEL_PRICES", '{"both": [1, 2, 0.5], "cloud": [3, 9, 1]}')
        monkeypatch.setenv(
            "LEAFLAB_GPU_PRICING",
            '{"both": {"usd_per_gpu_hour": 9, "tokens_per_s": 10}, '
            '"local": {"usd_per_gpu_hour": 2, "tokens_per_s": 500}}',
        )
        book = PriceBook.from_settings(LlmSettings())
        rows = {r.model: r.price for r in book.table(["unpriced-model"])}
        assert {m: p.source for m, p in rows.items()} == {
            "both": "configured",
            "cloud": "configured",
            "local": "gpu_derived",
            "unpriced-model": "default",
        }
        assert rows["both"] == ModelPrice(1, 2, 0.5)

    @pytest.mark.parametrize(
        "value",
        [
            '{"m": {"usd_per_gpu_hour": 2}}',
            '{"m": {"usd_per_gpu_hour": 2, "tokens_per_s": 0}}',
            '{"m": {"usd_per_gpu_hour": -1, "tokens_per_s": 10}}',
            '{"m": {"usd_per_gpu_hour": 2, "tokens_per_s": 10, "gpu": 4}}',
        ],
    )
    def test_bad_gpu_pricing_is_refused(self, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
        monkeypatch.setenv("LEAFLAB_GPU_PRICING", value)
        with pytest.raises(ValidationError):
            LlmSettings()
