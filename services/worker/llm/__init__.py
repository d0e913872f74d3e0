"""The worker's client for OpenAI-compatible model endpoints (vLLM first).

Streaming chat completions with native tool calls, typed errors that say
whether a retry can help, retries with backoff honouring Retry-After, token
usage incl. cached tokens, and pricing for every call.
"""

from services.worker.llm.client import ModelClient
from services.worker.llm.errors import ModelError
from services.worker.llm.pricing import ModelPrice, PriceBook, cost_usd
from services.worker.llm.types import ModelResponse, ToolCall, Usage

__all__ = [
    "ModelClient",
    "ModelError",
    "ModelPrice",
    "ModelResponse",
    "PriceBook",
    "ToolCall",
    "Usage",
    "cost_usd",
]
