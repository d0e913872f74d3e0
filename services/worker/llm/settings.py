"""Settings of the model client: retries and per-model prices (env prefix ``LEAFLAB_``)."""

from __future__ import annotations

from pydantic import Field, field_validator

from services.common.settings import CommonSettings

# (input, output, cached) US$ per million tokens. Self-hosted GPUs cost money too:
# this default is roughly what a small open model costs on rented GPUs.
DEFAULT_PRICE: tuple[float, float, float] = (0.20, 0.60, 0.05)

PriceTriple = tuple[float, float, float]


class LlmSettings(CommonSettings):
    """``LEAFLAB_MODEL_PRICES='{"model": [in, out, cached]}'`` sets prices per model;
    ``LEAFLAB_DEFAULT_MODEL_PRICE='[in, out, cached]'`` prices every other model."""

    model_prices: dict[str, PriceTriple] = Field(default_factory=dict)
    default_model_price: PriceTriple = DEFAULT_PRICE
    llm_max_retries: int = Field(default=2, ge=0, le=10)
    llm_retry_base_s: float = Field(default=0.5, ge=0)
    llm_retry_max_s: float = Field(default=8.0, ge=0)
    llm_retry_after_cap_s: float = Field(default=30.0, ge=0)

    @field_validator("model_prices")
    @classmethod
    def _non_negative_prices(cls, prices: dict[str, PriceTriple]) -> dict[str, PriceTriple]:
        for model, triple in prices.items():
            if any(p < 0 for p in triple):
                raise ValueError(f"price for {model!r} must not be negative: {list(triple)}")
        return prices

    @field_validator("default_model_price")
    @classmethod
    def _non_negative_default(cls, triple: PriceTriple) -> PriceTriple:
        if any(p < 0 for p in triple):
            raise ValueError(f"default model price must not be negative: {list(triple)}")
        return triple
