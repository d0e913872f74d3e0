"""What one OpenAI-compatible endpoint accepts: the contract between discovery and use.

Discovery (``services.worker.llm.discovery``) probes an endpoint once at start and
when its profile changes, caches the result in Redis, and hands a
:class:`Capabilities` to the endpoint's client; the client shapes every request
by it (roles, tools, structured output, streaming), the context layer budgets by
its window and overheads, and ``leaflab admin models`` / the admin page show it.

The defaults describe a permissive server (vLLM with its tool parser and
structured outputs on): a client built without discovery behaves as before.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

StructuredOutput = Literal["json_schema", "json_object", "prompt"]
ToolMode = Literal["native", "json"]
# Where ``context_tokens`` came from: vLLM's ``max_model_len`` in /v1/models,
# llama.cpp's /props ``n_ctx``, the server's own overflow error, or configuration.
ContextSource = Literal["models", "props", "error_probe", "configured"]


@dataclass(frozen=True)
class Capabilities:
    """One endpoint's discovered (or configured) capabilities."""

    # The context window in tokens; None means unknown (the configured limit applies).
    context_tokens: int | None = None
    context_source: ContextSource = "configured"
    # json_schema: OpenAI's response_format; json_object: {"type": "json_object",
    # "schema": ...} (llama.cpp); prompt: the schema goes in the prompt, the reply is
    # validated and repaired once.
    structured_output: StructuredOutput = "json_schema"
    # native: OpenAI ``tools`` (sent with tool_choice "auto"); json: the JSON tool
    # protocol (json_protocol.py) for servers without native tool calls.
    tool_mode: ToolMode = "native"
    # False: a call that carries tools goes without streaming (llama-cpp-python answers
    # a streamed tool call with an empty body).
    stream_tool_calls: bool = True
    # False: the system message is folded into the first user turn.
    system_role: bool = True
    # True: the chat template needs user/assistant alternation, so consecutive
    # same-role messages (and tool results) are merged before sending.
    alternation: bool = False
    # Calls the endpoint serves at once; None is unlimited. A single-slot server
    # (llama-cpp-python) ends a running stream when a new request arrives.
    max_concurrency: int | None = None
    # Tokens the chat template adds per call beyond the messages' text (measured once).
    template_overhead_tokens: int = 0
    # The server's tokenizer route, relative to the base URL's host (None: none found).
    tokenize_path: str | None = None
    # What answered: vllm, llama.cpp, llama-cpp-python, leaflab-sim or unknown.
    server: str = "unknown"
    models: tuple[str, ...] = ()
    # Unix time of the discovery; 0 for configured defaults.
    discovered_at: float = 0.0
    reachable: bool = True
    # Why discovery fell back to defaults, or what it could not find out.
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["models"] = list(self.models)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Capabilities:
        """The inverse of :meth:`to_dict`; unknown keys (a newer writer) are ignored."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        if "models" in values:
            values["models"] = tuple(values["models"] or ())
        return cls(**values)


PERMISSIVE = Capabilities()
