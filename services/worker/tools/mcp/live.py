"""The MCP catalog of the server list in force, rebuilt when an admin changes the list.

Which list is in force is the rule of services/common/mcp_servers.py (a stored
list wins over ``LEAFLAB_MCP_SERVERS``). At most every ``LEAFLAB_MCP_RELOAD_S``
a worker reads the stored list's version (one single-row SELECT); when it moved,
the list is read, checked and a new catalog built, so a job that starts after
that sees the new tools — no restart. A job keeps the catalog it started its
slice with; the replaced catalog's servers are closed once a call on them could
have finished (call timeout plus a margin). A database that cannot be read, or a
stored list that no longer parses, leaves the current catalog in place (logged).

The MCP SDK loads only when a catalog with at least one server is built.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from services.common.mcp_servers import (
    McpConfigError,
    McpServerConfig,
    read_stored,
    servers_in_force,
    stored_version,
)
from services.common.net_guard import NetGuard
from services.worker.tools.mcp.settings import McpSettings

if TYPE_CHECKING:
    from services.worker.tools.mcp.catalog import McpCatalog

log = logging.getLogger(__name__)
CLOSE_MARGIN_S = 10.0


class LiveCatalog:
    def __init__(
        self, settings: McpSettings, *, guard: NetGuard, factory: sessionmaker[Session]
    ) -> None:
        self.settings = settings
        self._guard = guard
        self._factory = factory
        self._lock = threading.Lock()
        self._version: int | None = None  # the stored version the catalog was built from
        self._checked_at = float("-inf")
        self._catalog: McpCatalog | None = None
        self._retired: list[McpCatalog] = []

    def current(self) -> McpCatalog | None:
        """The catalog for a job starting now; None when no server is in force."""
        with self._lock:
            now = time.monotonic()
            if now - self._checked_at >= self.settings.mcp_reload_s:
                self._checked_at = now
                self._reload_if_changed()
            return self._catalog

    def close(self) -> None:
        with self._lock:
            catalogs, self._retired = [*self._retired, self._catalog], []
            self._catalog = None
        for catalog in catalogs:
            if catalog is not None:
                catalog.close()

    def _reload_if_changed(self) -> None:
        try:
            with self._factory() as db:
                if stored_version(db) == self._version:
                    return
                stored = read_stored(db)
        except SQLAlchemyError as exc:
            log.warning("mcp: the stored server list could not be read (%s); keeping", exc)
            return
        try:
            source, servers = servers_in_force(stored, self.settings.mcp_servers)
        except McpConfigError as exc:
            log.error("mcp: %s; keeping the servers in force", exc)
            self._version = stored.version
            return
        old, self._catalog = self._catalog, self._build(servers)
        if self._version is not None:
            log.info(
                "mcp: server list version %d from the %s: %s",
                stored.version,
                source,
                [s.name for s in servers],
            )
        self._version = stored.version
        if old is not None:
            self._retire(old)

    def _build(self, servers: tuple[McpServerConfig, ...]) -> McpCatalog | None:
        if not servers:
            return None
        from services.worker.tools.mcp.catalog import McpCatalog

        return McpCatalog(servers, self.settings, guard=self._guard)

    def _retire(self, catalog: McpCatalog) -> None:
        self._retired.append(catalog)
        grace = self.settings.mcp_call_timeout_s + CLOSE_MARGIN_S

        def close_later() -> None:
            with self._lock:
                if catalog not in self._retired:
                    return  # closed by close() already
                self._retired.remove(catalog)
            catalog.close()

        timer = threading.Timer(grace, close_later)
        timer.daemon = True
        timer.start()
