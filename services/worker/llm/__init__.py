"""The worker's client for OpenAI-compatible model endpoints (vLLM first).

Streaming chat completions with native tool calls (or the JSON tool protocol),
typed errors that say whether a retry can help, retries with backoff honouring
Retry-After, token usage incl. cached tokens, and pricing for every call.
"""

from services.worker.llm.backoff import RetryPolicy
from services.worker.llm.client import ModelClient, client_from_settings
from services.worker.llm.errors import ModelError
from services.worker.llm.pricing import ModelPrice, PriceBook, cost_usd, worst_case_usd
from services.worker.llm.settings import LlmSettings
from services.worker.llm.types import ModelResponse, ToolCall, Usage

__all__ = [
    "LlmSettings",
    "ModelClient",
    "ModelError",
    "ModelPrice",
    "ModelResponse",
    "PriceBook",
    "RetryPolicy",
    "ToolCall",
    "Usage",
    "client_from_settings",
    "cost_usd",
    "worst_case_usd",
]
