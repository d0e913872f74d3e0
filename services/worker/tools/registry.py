"""The set of tools offered to the model, by name."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from services.worker.tools.base import Tool, ToolError


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool[Any]]) -> None:
        self._tools: dict[str, Tool[Any]] = {}
        for tool in tools:
            if tool.name in self._tools:
                raise ValueError(f"duplicate tool name {tool.name!r}")
            self._tools[tool.name] = tool
        # Generating JSON schemas costs milliseconds of CPU per tool; the set is
        # fixed for the registry's life, so build them once, not per model call.
        self._schemas = [self._tools[n].openai_schema() for n in sorted(self._tools)]

    def get(self, name: str) -> Tool[Any]:
        try:
            return self._tools[name]
        except KeyError:
            raise ToolError(
                "unknown_tool",
                f"unknown tool {name!r}; available: {', '.join(sorted(self._tools))}",
                category="validation",
            ) from None

    def names(self) -> list[str]:
        return sorted(self._tools)

    def schemas(self, *, only: frozenset[str] | None = None) -> list[dict[str, Any]]:
        """Every tool's schema, or only those named (a subagent's narrower set)."""
        if only is None:
            return self._schemas
        return [s for s in self._schemas if s["function"]["name"] in only]
