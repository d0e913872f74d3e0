"""The window a model call must fit: everything the server will evaluate, counted first.

The server evaluates more than the view's messages: the native ``tools`` schemas
(rendered into the prompt by its chat template), or, under the JSON tool
protocol, the tool descriptions the client adds to the system prompt, and the
template's own framing (``Capabilities.template_overhead_tokens``). All of it
is counted here, against the endpoint's discovered window
(``Capabilities.context_tokens``; ``LEAFLAB_CONTEXT_LIMIT_TOKENS`` when unknown)
less the output reserve, so the compression layers act on the real budget and
a view that still does not fit is refused before it is sent.

The output reserve is ``min(max_tokens, LEAFLAB_CONTEXT_OUTPUT_RESERVE_TOKENS,
window / 2)``: a reply never needs more room than it may produce, and on a window
smaller than twice ``max_tokens`` (a 1,024-token llama.cpp server) half the window
stays for the prompt; the server ends such a reply at the window's end.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from services.worker.llm import json_protocol
from services.worker.llm.capabilities import PERMISSIVE, Capabilities
from services.worker.llm.token_estimate import estimate_tokens, view_tokens
from services.worker.llm.tokenize import tokenizer_for
from services.worker.spine.deps import RuntimeDeps


def endpoint_capabilities(deps: RuntimeDeps, profile: str | None) -> Capabilities:
    """The capabilities of the endpoint serving ``profile`` (duck-typed: a client
    without ``capabilities()`` is taken as permissive)."""
    router = deps.router
    endpoint = router.endpoints.get(profile) if router is not None and profile else None
    client = getattr(endpoint, "client", None)
    probe = getattr(client, "capabilities", None)
    if not callable(probe):
        return PERMISSIVE
    try:
        caps = probe()
    except Exception:  # discovery trouble must not stop a turn: configured values apply
        return PERMISSIVE
    return caps if isinstance(caps, Capabilities) else PERMISSIVE


@dataclass(frozen=True)
class ContextWindow:
    """The token budget of one call and what it is made of."""

    window_tokens: int
    window_source: str
    output_reserve_tokens: int
    tools_tokens: int
    template_tokens: int
    tool_mode: str

    @property
    def overhead_tokens(self) -> int:
        """What the server evaluates beside the messages."""
        return self.tools_tokens + self.template_tokens

    @property
    def input_tokens(self) -> int:
        """The budget of the messages themselves (may be ≤ 0: the tools alone overflow)."""
        return self.window_tokens - self.output_reserve_tokens - self.overhead_tokens

    def total(self, messages: list[dict[str, Any]]) -> int:
        """Every token the server will evaluate for ``messages``, and the output reserve."""
        return view_tokens(messages) + self.overhead_tokens + self.output_reserve_tokens

    def fits(self, messages: list[dict[str, Any]]) -> bool:
        return self.total(messages) <= self.window_tokens

    def record(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """What was counted, for the llm step's ``context`` record."""
        return {
            "window_tokens": self.window_tokens,
            "window_source": self.window_source,
            "output_reserve_tokens": self.output_reserve_tokens,
            "tools_tokens": self.tools_tokens,
            "tool_mode": self.tool_mode,
            "template_tokens": self.template_tokens,
            "messages_tokens": view_tokens(messages),
            "evaluated_tokens": view_tokens(messages) + self.overhead_tokens,
        }

    def overflow_message(self, messages: list[dict[str, Any]]) -> str:
        evaluated = view_tokens(messages) + self.overhead_tokens
        room = self.window_tokens - self.output_reserve_tokens
        return (
            "the conversation does not fit the model's context window "
            f"({evaluated} > {room} tokens: {view_tokens(messages)} of messages, "
            f"{self.tools_tokens} of tool descriptions, {self.template_tokens} of chat "
            f"template, in a {self.window_tokens}-token window less {self.output_reserve_tokens} "
            "kept for the reply), even after every compression layer; start a new session "
            "or shorten the last message"
        )


# The registry hands every call the same schema list object (built once per
# registry): its count is kept per object, so a model call does not encode the
# schemas again only to count them (~5 % of a worker's CPU per step). The list is
# kept beside its count, so an id is never reused while its entry lives.
_TOOLS_TOKENS: dict[tuple[int, bool], tuple[list[dict[str, Any]], int]] = {}
_TOOLS_TOKENS_MAX = 64


def tools_tokens(tools: list[dict[str, Any]] | None, *, json_mode: bool) -> int:
    """Tokens of the tool descriptions the server sees: the JSON protocol's text in the
    system prompt, or the native schemas as the request carries them."""
    if not tools:
        return 0
    key = (id(tools), json_mode)
    known = _TOOLS_TOKENS.get(key)
    if known is not None and known[0] is tools:
        return known[1]
    if json_mode:
        count = estimate_tokens(json_protocol.tool_instructions(tools))
    else:
        count = estimate_tokens(json.dumps(tools, ensure_ascii=False, separators=(",", ":")))
    if len(_TOOLS_TOKENS) >= _TOOLS_TOKENS_MAX:
        _TOOLS_TOKENS.clear()  # filtered lists (a turn's own tool subset) come and go
    _TOOLS_TOKENS[key] = (tools, count)
    return count


def window_for(
    deps: RuntimeDeps, *, profile: str | None, tools: list[dict[str, Any]] | None
) -> ContextWindow:
    """The window of a call to ``profile``'s endpoint carrying ``tools``."""
    settings = deps.settings
    caps = endpoint_capabilities(deps, profile)
    window = caps.context_tokens or settings.context_limit_tokens
    source = caps.context_source if caps.context_tokens else "configured"
    reserve = min(settings.llm_max_tokens, settings.context_output_reserve_tokens, window // 2)
    endpoint = deps.router.endpoints.get(profile) if deps.router and profile else None
    json_mode = caps.tool_mode == "json" or bool(getattr(endpoint, "json_tool_protocol", False))
    return ContextWindow(
        window_tokens=window,
        window_source=source,
        output_reserve_tokens=reserve,
        tools_tokens=tools_tokens(tools, json_mode=json_mode),
        template_tokens=caps.template_overhead_tokens,
        tool_mode="json" if json_mode else "native",
    )


def server_prompt_tokens(
    deps: RuntimeDeps,
    *,
    profile: str | None,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
) -> int | None:
    """The prompt's tokens by the endpoint's own tokenizer (plus the template's
    overhead), for the budget reservation; None when the endpoint has none (the
    reservation then keeps its local upper bound)."""
    caps = endpoint_capabilities(deps, profile)
    endpoint = deps.router.endpoints.get(profile) if deps.router and profile else None
    base_url = getattr(getattr(endpoint, "client", None), "base_url", None)
    tokenizer = tokenizer_for(base_url, caps)
    if tokenizer is None:
        return None
    return tokenizer.prompt_tokens(messages, tools) + caps.template_overhead_tokens
