"""Settings of the model client: retries and per-model prices (env prefix ``LEAFLAB_``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from services.common.settings import CommonSettings

# (input, output, cached) US$ per million tokens. Self-hosted GPUs cost money too:
# this default is roughly what a small open model costs on rented GPUs.
DEFAULT_PRICE: tuple[float, float, float] = (0.20, 0.60, 0.05)

PriceTriple = tuple[float, float, float]
# "auto": what discovery finds; anything else is configured and wins over discovery.
ToolProtocolOption = Literal["auto", "native", "json"]
StructuredOutputOption = Literal["auto", "json_schema", "json_object", "prompt"]
Tristate = Literal["auto"] | bool


class EndpointOptions(BaseModel):
    """What an endpoint accepts, as configured: every field left at ``auto``/None is
    discovered (``services.worker.llm.discovery``), every other value wins over it."""

    model_config = ConfigDict(extra="forbid")

    tool_protocol: ToolProtocolOption = "auto"
    structured_output: StructuredOutputOption = "auto"
    # The context window in tokens (None: discovered, else LEAFLAB_CONTEXT_LIMIT_TOKENS).
    context_tokens: int | None = Field(default=None, gt=0)
    # Calls sent to the endpoint at once; 0 is unlimited, None is discovered.
    max_concurrency: int | None = Field(default=None, ge=0)
    system_role: Tristate = "auto"
    alternation: Tristate = "auto"
    stream_tool_calls: Tristate = "auto"
    # False: no probes at all; the configured values and permissive defaults apply.
    discover: bool = True


class ProfileConfig(EndpointOptions):
    """One entry of ``LEAFLAB_MODEL_PROFILES``: an OpenAI-compatible endpoint and the
    models it serves (an empty list serves any model), with its endpoint options."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    base_url: str = Field(min_length=1)
    api_key: str = "sk-local"
    models: list[str] = Field(default_factory=list)
    # The older spelling of ``tool_protocol: "json"`` (still accepted).
    json_tool_protocol: bool = False
    timeout_s: float | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _old_json_flag(self) -> ProfileConfig:
        if self.json_tool_protocol and self.tool_protocol == "auto":
            self.tool_protocol = "json"
        return self

    def options(self) -> EndpointOptions:
        """The endpoint options alone (what the discovery cache's key hashes)."""
        return EndpointOptions(**{k: getattr(self, k) for k in EndpointOptions.model_fields})


class GpuPriceConfig(BaseModel):
    """One entry of ``LEAFLAB_GPU_PRICING``: a self-hosted model priced from GPU cost."""

    model_config = ConfigDict(extra="forbid")

    usd_per_gpu_hour: float = Field(ge=0)
    # Measured generation throughput of the whole deployment (all its ``gpus``) at the
    # concurrency it usually runs: the GPUs cost money whether a token is made or not.
    tokens_per_s: float = Field(gt=0)
    gpus: int = Field(default=1, ge=1)
    # Prefill is much faster than decoding; unmeasured, it is priced like output (safe side).
    prefill_tokens_per_s: float | None = Field(default=None, gt=0)
    # A prefix-cache hit skips most of the prefill work.
    cached_fraction: float = Field(default=0.1, ge=0, le=1)


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
    model_long_context: str | None = None
    # Routing (services/worker/llm/routing): endpoint profiles, tier candidates
    # ("profile:model" or a bare model served by any profile), scene -> tier.
    model_profiles: list[ProfileConfig] = Field(default_factory=list)
    model_routes: dict[str, list[str]] = Field(default_factory=dict)
    model_scenes: dict[str, str] = Field(default_factory=dict)
    # Circuit breaker per (endpoint, model), shared through Redis.
    breaker_failure_threshold: int = Field(default=3, ge=1)
    breaker_cooldown_s: float = Field(default=10.0, gt=0)
    breaker_probe_timeout_s: float = Field(default=30.0, gt=0)
    # Failures further apart than this are not "consecutive": the count starts over.
    breaker_window_s: float = Field(default=60.0, gt=0)
    gpu_pricing: dict[str, GpuPriceConfig] = Field(default_factory=dict)
    # Connect + wait for the first token (a streamed reply: the prompt's evaluation).
    llm_timeout_s: float = Field(default=120.0, gt=0)
    # Longest silence between two chunks of a streamed reply: longer is a stall
    # (a retryable timeout).
    llm_idle_timeout_s: float = Field(default=60.0, gt=0)
    # Hard cap on one call; a stream's own deadline (max_tokens at its measured rate,
    # ×2) is usually shorter. A progressing stream cut by it keeps its partial reply.
    llm_total_timeout_s: float = Field(default=1800.0, gt=0)
    llm_max_tokens: int = 2048
    # The implicit ``default`` profile's endpoint options (a profile's own fields in
    # LEAFLAB_MODEL_PROFILES): "auto"/unset means discovered.
    llm_tool_protocol: ToolProtocolOption = "auto"
    llm_structured_output: StructuredOutputOption = "auto"
    llm_context_tokens: int | None = Field(default=None, gt=0)
    llm_max_concurrency: int | None = Field(default=None, ge=0)
    llm_system_role: Tristate = "auto"
    llm_alternation: Tristate = "auto"
    llm_stream_tool_calls: Tristate = "auto"
    llm_discover: bool = True
    # Discovery (services/worker/llm/discovery): results cached in Redis this long,
    # an unreachable endpoint retried after model_discovery_retry_s, the whole probe
    # run of one endpoint bounded by model_discovery_timeout_s (worker start waits
    # at most that long per endpoint), workers re-read the cache every recheck_s.
    model_discovery_ttl_s: float = Field(default=86_400.0, gt=0)
    model_discovery_retry_s: float = Field(default=60.0, gt=0)
    model_discovery_timeout_s: float = Field(default=60.0, gt=0)
    model_discovery_recheck_s: float = Field(default=10.0, gt=0)
    # Prompt size of llama-cpp-python's context probe (its overflow error names the
    # window; it is raised before any evaluation). 0: never send it.
    model_discovery_overflow_probe_tokens: int = Field(default=131_072, ge=0)
    # Per-endpoint concurrency limit: how long a call waits for a slot before it is an
    # overload (retryable), and the lease that frees a dead worker's slot.
    llm_queue_timeout_s: float = Field(default=300.0, gt=0)
    llm_slot_lease_s: float = Field(default=30.0, gt=0)

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

    @field_validator("model_profiles")
    @classmethod
    def _unique_profiles(cls, profiles: list[ProfileConfig]) -> list[ProfileConfig]:
        names = [p.name for p in profiles]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"model profile names must be unique: {duplicates}")
        return profiles

    @model_validator(mode="after")
    def _remote_endpoint_needs_key(self) -> LlmSettings:
        if (
            self.env == "prod"
            and self.llm_api_key == "sk-local"
            and "127.0.0.1" not in self.llm_base_url
        ):
            raise ValueError("LEAFLAB_LLM_API_KEY must be set in prod for a remote endpoint")
        return self
