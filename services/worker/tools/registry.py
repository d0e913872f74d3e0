"""The set of tools offered to the model, by name."""

from __future__ import annotations

from collections.abc import Iterable

from services.worker.tools.base import Tool, ToolError


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool]) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            if tool.name in self._tools:
                raise ValueError(f"duplicate tool name {tool.name!r}")
            self._tools[tool.name] = tool

    def get(self, name: str) -> Tool:
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

    def schemas(self) -> list[dict[str, object]]:
        return [self._tools[n].openai_schema() for n in self.names()]
