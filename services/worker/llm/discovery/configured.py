"""Configured values win: a profile's options laid over what discovery found.

Each capability's source is kept (``configured``, ``discovered`` or ``default``)
so ``leaflab admin models`` and the admin page show where a value came from.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

from services.worker.llm.capabilities import Capabilities
from services.worker.llm.settings import EndpointOptions

Source = Literal["configured", "discovered", "default"]
# The capabilities a profile can set, and the option that sets each.
OPTION_OF = {
    "tool_mode": "tool_protocol",
    "structured_output": "structured_output",
    "context_tokens": "context_tokens",
    "max_concurrency": "max_concurrency",
    "system_role": "system_role",
    "alternation": "alternation",
    "stream_tool_calls": "stream_tool_calls",
}
SHOWN = (*OPTION_OF, "template_overhead_tokens", "tokenize_path")
_DEFAULTS = Capabilities()


def configured_values(options: EndpointOptions) -> dict[str, Any]:
    """The capabilities a profile fixes (its options that are not ``auto``/unset)."""
    values: dict[str, Any] = {}
    for field, option in OPTION_OF.items():
        value = getattr(options, option)
        if value is None or value == "auto":
            continue
        if field == "max_concurrency" and value == 0:
            value = None  # 0: configured as unlimited
        values[field] = value
    return values


def effective(
    discovered: Capabilities, options: EndpointOptions, *, default_context: int | None = None
) -> tuple[Capabilities, dict[str, Source]]:
    """The capabilities a client uses, and each shown field's source. Without a
    discovered or configured window, ``default_context`` (LEAFLAB_CONTEXT_LIMIT_TOKENS)
    applies with source ``default``."""
    fixed = configured_values(options)
    caps = replace(discovered, **fixed)
    if "context_tokens" in fixed:
        caps = replace(caps, context_source="configured")
    elif caps.context_tokens is None and default_context is not None:
        caps = replace(caps, context_tokens=default_context, context_source="configured")
    sources: dict[str, Source] = {}
    fresh = discovered.discovered_at > 0 and discovered.reachable
    for field in SHOWN:
        if field in fixed:
            sources[field] = "configured"
        elif field == "context_tokens":
            found = (
                discovered.context_tokens is not None and discovered.context_source != "configured"
            )
            sources[field] = "discovered" if found else "default"
        elif fresh and getattr(discovered, field) is not None:
            sources[field] = "discovered"
        else:
            sources[field] = "default"
    return caps, sources
