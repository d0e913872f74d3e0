"""What a model call costs in US$, for budgets and the spend ledger."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

from services.worker.llm.settings import DEFAULT_PRICE, GpuPriceConfig, LlmSettings
from services.worker.llm.types import Usage

PER_MTOK = 1_000_000
SECONDS_PER_HOUR = 3600
# configured: LEAFLAB_MODEL_PRICES; gpu_derived: LEAFLAB_GPU_PRICING; default: neither.
PriceSource = Literal["configured", "gpu_derived", "default"]


@dataclass(frozen=True)
class ModelPrice:
    """US$ per million tokens: fresh input, output, and input served from the prefix cache;
    ``source`` says where the price came from (it does not take part in equality)."""

    input_per_mtok: float
    output_per_mtok: float
    cached_per_mtok: float
    source: PriceSource = field(default="configured", compare=False)

    @classmethod
    def from_triple(
        cls, triple: tuple[float, float, float], source: PriceSource = "configured"
    ) -> ModelPrice:
        return cls(*triple, source=source)

    @classmethod
    def from_gpu(cls, gpu: GpuPriceConfig) -> ModelPrice:
        """What the GPUs cost per token they make: the deployment's $/s over its tokens/s.
        Output is priced at the measured generation rate, input at the prefill rate
        (the generation rate when unmeasured), a cached prefix at ``cached_fraction``
        of input."""
        usd_per_s = gpu.usd_per_gpu_hour * gpu.gpus / SECONDS_PER_HOUR
        output = usd_per_s / gpu.tokens_per_s * PER_MTOK
        fresh = usd_per_s / (gpu.prefill_tokens_per_s or gpu.tokens_per_s) * PER_MTOK
        return cls(fresh, output, fresh * gpu.cached_fraction, source="gpu_derived")


@dataclass(frozen=True)
class PriceRow:
    """One line of the price table (``leaflab admin prices``)."""

    model: str
    price: ModelPrice


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


def clamp_usage(usage: Usage, max_tokens: int | None) -> Usage:
    """The usage a call is charged for: output tokens never above the request's
    ``max_tokens`` (a server that ignores it, or the simulator, cannot make a call cost
    more than its reservation); input and cached tokens are charged as reported."""
    if max_tokens is None or usage.output_tokens <= max_tokens:
        return usage
    return replace(usage, output_tokens=max_tokens)


def billed_usd(usage: Usage, price: ModelPrice, *, max_tokens: int | None) -> float:
    """:func:`cost_usd` of :func:`clamp_usage`: what a call is charged."""
    return cost_usd(clamp_usage(usage, max_tokens), price)


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
        self._names = {name.lower(): name for name in (prices or {})}
        self._prices = {name.lower(): p for name, p in (prices or {}).items()}
        self.default = default or ModelPrice.from_triple(DEFAULT_PRICE, "default")

    @classmethod
    def from_settings(cls, settings: LlmSettings) -> PriceBook:
        """Configured prices win over GPU-derived ones for the same model (an operator who
        wrote a price meant it); every other model gets the default price."""
        prices = {m: ModelPrice.from_gpu(g) for m, g in settings.gpu_pricing.items()}
        prices.update({m: ModelPrice.from_triple(t) for m, t in settings.model_prices.items()})
        return cls(prices, ModelPrice.from_triple(settings.default_model_price, "default"))

    def table(self, models: list[str] | None = None) -> list[PriceRow]:
        """Every priced model, plus ``models`` (e.g. the routed ones) at their effective
        price, sorted by name."""
        rows = {self._names[k]: p for k, p in self._prices.items()}
        for model in models or []:
            rows.setdefault(model, self.price_for(model))
        return [PriceRow(m, rows[m]) for m in sorted(rows, key=str.lower)]

    def price_for(self, model: str) -> ModelPrice:
        """Exact name first (case-insensitive), then the name without an ``org/`` prefix."""
        key = model.lower()
        if key in self._prices:
            return self._prices[key]
        return self._prices.get(key.rsplit("/", 1)[-1], self.default)

    def cost_usd(self, model: str, usage: Usage) -> float:
        """What the server reported, priced (no clamp): the overrun's "reported" side."""
        return cost_usd(usage, self.price_for(model))

    def billed_usd(self, model: str, usage: Usage, *, max_tokens: int | None) -> float:
        """What the call is charged: output clamped to ``max_tokens``."""
        return billed_usd(usage, self.price_for(model), max_tokens=max_tokens)
