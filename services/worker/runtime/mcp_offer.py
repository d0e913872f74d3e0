"""The MCP tools one job is offered (services/worker/tools/mcp), beside the built-in ones.

The job's project (id and name, read once) decides which servers it sees; a
server skipped at discovery (it failed to start, list, or every tool broke a
limit) is told to the job once per slice as an ``mcp_unavailable`` event and
recorded on the round's span, so a user can see why a tool is absent. A
subagent (a job offered a narrowed tool set) gets no MCP tools.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from sqlalchemy import select

from services.common.models import Project
from services.worker.spine.deps import RuntimeDeps
from services.worker.spine.events import JobEvents
from services.worker.tools.base import Tool

if TYPE_CHECKING:
    from services.worker.tools.mcp.catalog import McpCatalog

MCP_PREFIX = "mcp."


class McpOffering:
    def __init__(
        self,
        deps: RuntimeDeps,
        *,
        project_id: Any,
        narrowed: bool,
        events: JobEvents,
    ) -> None:
        # One catalog for the slice: a list changed meanwhile applies from the next one.
        live = None if narrowed else deps.mcp
        self._catalog: McpCatalog | None = live.current() if live is not None else None
        self._deps = deps
        self._project_id = str(project_id) if project_id is not None else None
        self._project_name: str | None = None
        self._named = False
        self._events = events
        self._told: set[tuple[str, str | None]] = set()
        self._last: tuple[tuple[int, ...], list[dict[str, Any]]] | None = None

    @staticmethod
    def is_mcp(name: str) -> bool:
        return name.startswith(MCP_PREFIX)

    def schemas(self, builtin: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``builtin`` plus this job's MCP tools (the same list object while nothing changed)."""
        if self._catalog is None:
            return builtin
        offer = self._catalog.offer(self._project_id, self._name())
        for problem in offer.problems:
            if (problem.server, problem.tool) in self._told:
                continue
            self._told.add((problem.server, problem.tool))
            self._events.emit(
                "mcp_unavailable",
                {"server": problem.server, "tool": problem.tool, "reason": problem.reason},
            )
            trace.get_current_span().add_event(
                "mcp_unavailable", {"mcp.server": problem.server, "reason": problem.reason}
            )
        key = (id(builtin), *(id(t) for t in offer.tools))
        if self._last is None or self._last[0] != key:
            self._last = (key, [*builtin, *(t.openai_schema() for t in offer.tools)])
        return self._last[1]

    def tool(self, name: str) -> Tool[Any]:
        """The MCP tool for a call from this job (ToolError: unknown, or not offered here)."""
        if self._catalog is None:
            return self._deps.registry.get(name)  # its unknown_tool error, listing the rest
        return self._catalog.tool(name, self._project_id, self._name())

    def _name(self) -> str | None:
        if not self._named and self._project_id is not None:
            with self._deps.factory() as db:
                self._project_name = db.scalar(
                    select(Project.name).where(Project.id == self._project_id)
                )
            self._named = True
        return self._project_name
