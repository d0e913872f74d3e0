"""What a model call costs in US$, for budgets and the spend ledger."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from services.worker.llm.settings import DEFAULT_PRICE, LlmSettings
from services.worker.llm.types import Usage

PER_MTOK = 1_000_000


@dataclass(frozen=True)
class ModelPrice:
    """US$ per million tokens: fresh input, output, and input served from the prefix cache."""

    input_per_mtok: float
    output_per_mtok: float
    cached_per_mtok: float

    @classmethod
    def from_triple(cls, triple: tuple[float, float, float]) -> ModelPrice:
        return cls(*triple)


def cost_usd(usage: Usage, price: ModelPrice) -> float:
    """(input − cached) × input price + cached × cache price + output × output price."""
    cached = min(usage.cached_tokens, usage.input_tokens)
    fresh = usage.input_tokens - cached
    total = (
        fresh * price.input_per_mtok
        + cached * price.cached_per_mtok
        + usage.output_tokens * price.output_per_mtok
    )
    return total / PER_MTOK


def worst_case_usd(*, input_tokens: int, max_tokens: int, price: ModelPrice) -> float:
    """The most a call can cost (no cache hits, every output token used): what a budget
    reserves before the call."""
    return cost_usd(Usage(input_tokens=input_tokens, output_tokens=max_tokens), price)


class PriceBook:
    """Prices per model name, with a non-zero default for models nobody priced."""

    def __init__(
        self,
        prices: Mapping[str, ModelPrice] | None = None,
        default: ModelPrice | None = None,
    ) -> None:
        self._prices = {name.lower(): p for name, p in (prices or {}).items()}
        self.default = default or ModelPrice.from_triple(DEFAULT_PRICE)

    @classmethod
    def from_settings(cls, settings: LlmSettings) -> PriceBook:
        prices = {m: ModelPrice.from_triple(t) for m, t in settings.model_prices.items()}
        return cls(prices, ModelPrice.from_triple(settings.default_model_price))

    def price_for(self, model: str) -> ModelPrice:
        """Exact name first (case-insensitive), then the name without an ``org/`` prefix."""
        key = model.lower()
        if key in self._prices:
            return self._prices[key]
        return self._prices.get(key.rsplit("/", 1)[-1], self.default)

    def cost_usd(self, model: str, usage: Usage) -> float:
        return cost_usd(usage, self.price_for(model))
