"""Capabilities as a few lines of text: ``leaflab up``'s ready banner and
``leaflab admin models``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from services.worker.llm.capabilities import Capabilities

_CONTEXT_FROM = {
    "models": "from /v1/models",
    "props": "from /props",
    "error_probe": "from the server's overflow error",
    "configured": "configured",
}


def _mark(field: str, sources: Mapping[str, str] | None) -> str:
    if not sources:
        return ""
    source = sources.get(field)
    return f" [{source}]" if source else ""


def _tools(caps: Capabilities) -> str:
    if caps.tool_mode == "json":
        return "JSON tool protocol"
    return "native" + ("" if caps.stream_tool_calls else " (not streamed)")


def _roles(caps: Capabilities) -> str:
    system = "system role" if caps.system_role else "system folded into the first user turn"
    turns = "strict user/assistant alternation" if caps.alternation else "any role order"
    return f"{system}, {turns}"


def summary_lines(
    caps: Capabilities,
    endpoint: str,
    model: str,
    sources: Mapping[str, str] | None = None,
) -> list[str]:
    """What an operator needs to know about one endpoint and model, in 3–5 lines;
    ``sources`` (field → configured/discovered/default) marks each value's origin."""
    head = f"model {model} at {endpoint}"
    if not caps.reachable:
        return [
            f"{head}: UNREACHABLE ({(caps.error or 'no answer').removeprefix('unreachable: ')})",
            "  starting anyway: configured defaults apply until the endpoint answers",
        ]
    lines = [f"{head} ({caps.server})"]
    if caps.context_tokens is not None:
        origin = _CONTEXT_FROM.get(caps.context_source, caps.context_source)
        context = f"{caps.context_tokens} tokens ({origin})"
    else:
        context = "unknown (LEAFLAB_CONTEXT_LIMIT_TOKENS applies)"
    lines.append(f"  context: {context}{_mark('context_tokens', sources)}")
    lines.append(
        f"  structured output: {caps.structured_output}{_mark('structured_output', sources)}"
        f" · tools: {_tools(caps)}{_mark('tool_mode', sources)}"
    )
    concurrency = "unlimited" if caps.max_concurrency is None else str(caps.max_concurrency)
    lines.append(
        f"  roles: {_roles(caps)}{_mark('alternation', sources)}"
        f" · concurrency: {concurrency}{_mark('max_concurrency', sources)}"
    )
    extra = f"  template overhead: {caps.template_overhead_tokens} tokens"
    extra += f" · tokenizer: {caps.tokenize_path or 'none'}"
    lines.append(extra)
    if caps.error:
        lines.append(f"  notes: {caps.error}")
    return lines


def record_lines(record: Mapping[str, Any]) -> list[str]:
    """One cached record (``services.common.model_caps``) as :func:`summary_lines`."""
    head = f"[{record.get('profile')}]"
    if record.get("expired"):
        return [f"{head} model {record.get('model')}: no current discovery (being rediscovered)"]
    caps = Capabilities.from_dict(dict(record.get("effective") or {}))
    found = Capabilities.from_dict(dict(record.get("discovered") or {}))
    caps = Capabilities.from_dict({**caps.to_dict(), "reachable": found.reachable})
    lines = summary_lines(
        caps, str(record.get("base_url")), str(record.get("model")), record.get("sources")
    )
    return [f"{head} {lines[0]}", *lines[1:]]
