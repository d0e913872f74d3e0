"""Settings of the model client: retries and per-model prices (env prefix ``LEAFLAB_``)."""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from services.common.settings import CommonSettings

# (input, output, cached) US$ per million tokens. Self-hosted GPUs cost money too:
# this default is roughly what a small open model costs on rented GPUs.
DEFAULT_PRICE: tuple[float, float, float] = (0.20, 0.60, 0.05)

PriceTriple = tuple[float, float, float]


class LlmSettings(CommonSettings):
    """``LEAFLAB_MODEL_PRICES='{"model": [in, out, cached]}'`` sets prices per model;
    ``LEAFLAB_DEFAULT_MODEL_PRICE='[in, out, cached]'`` prices every other model."""

    # Model endpoint (any OpenAI-compatible server; vLLM first).
    llm_base_url: str = "http://127.0.0.1:8100/v1"
    llm_api_key: str = "sk-local"
    model: str = "leaflab-sim"
    # Advertised tier names (INTERFACES.md); model routing will read them.
    model_fast: str | None = None
    model_flagship: str | None = None
    llm_timeout_s: float = 120.0
    llm_max_tokens: int = 2048

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

    @model_validator(mode="after")
    def _remote_endpoint_needs_key(self) -> LlmSettings:
        if (
            self.env == "prod"
            and self.llm_api_key == "sk-local"
            and "127.0.0.1" not in self.llm_base_url
        ):
            raise ValueError("LEAFLAB_LLM_API_KEY must be set in prod for a remote endpoint")
        return self
