"""What the agent runtime needs, built once per worker process."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from celery import Celery
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from services.common.events import EventPublisher
from services.worker.llm.client import ModelClient
from services.worker.llm.pricing import PriceBook
from services.worker.llm.routing.router import ModelRouter
from services.worker.llm.routing.setup import single_client_router
from services.worker.settings import WorkerSettings
from services.worker.spine.lease import LeaseKeeper
from services.worker.tools.ports import LibraryEndpoint, SandboxPort
from services.worker.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from services.worker.tools.mcp.live import LiveCatalog


@dataclass
class RuntimeDeps:
    settings: WorkerSettings
    factory: sessionmaker[Session]
    # The same pool in autocommit mode, for single-statement ledger writes.
    writer: Engine
    model: ModelClient
    prices: PriceBook
    registry: ToolRegistry
    publisher: EventPublisher
    celery: Celery
    keeper: LeaseKeeper
    # Ports offered to tools; None where this worker has no such service.
    sandbox: SandboxPort | None = None
    library: LibraryEndpoint | None = None
    # MCP tool servers (the list in force: stored by an admin, else LEAFLAB_MCP_SERVERS);
    # None: this worker offers none.
    mcp: LiveCatalog | None = None
    # Model calls go through the router (profiles, fallback, breaker); when deps are
    # built by hand without one, every tier routes to ``model`` alone.
    router: ModelRouter | None = field(default=None)

    def __post_init__(self) -> None:
        if self.router is None:
            self.router = single_client_router(self.model, self.settings.model)
