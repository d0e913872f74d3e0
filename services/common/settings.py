"""Settings shared by every Leaflab service.

Only what every service needs lives here (database, Redis, home, workspaces,
Celery limits, the internal token and the library's address); each service
subclasses :class:`CommonSettings` with the fields it alone reads. All read
``LEAFLAB_``-prefixed environment variables and an optional ``.env`` file.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from services.common.contracts.tasks import SANDBOX_QUEUE

DEV_INTERNAL_TOKEN = "leaflab-internal-dev-token"  # noqa: S105 - refused in prod below


def default_home() -> Path:
    return Path.home() / ".leaflab"


class CommonSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="LEAFLAB_", env_file=".env", extra="ignore")

    env: str = Field(default="dev", description="dev | test | prod; prod enforces secret checks")
    home: Path = Field(default_factory=default_home)
    database_url: str | None = None
    redis_url: str | None = None
    workspace_root: Path | None = None
    # Disk caps of session workspaces: the sandbox enforces them (before, during
    # and after each exec), the API shows usage against them. Common because both
    # read them; a workspace never grows past the first, a user's past the second.
    sandbox_workspace_max_mb: int = Field(default=2048, ge=1)
    sandbox_user_disk_max_mb: int = Field(default=8192, ge=1)
    # The Celery queue of this deployment's sandbox workers: the agent's python/bash
    # tools send execs there, the API a deleted session's workspace removal. A
    # deployment can give a group of workers (or a test) its own sandbox pool.
    sandbox_queue: str = SANDBOX_QUEUE
    log_level: str = "INFO"
    # The model's context window: the worker budgets prompts by it, the chat page
    # shows how much of it a turn used.
    context_limit_tokens: int = Field(default=32_000, ge=512)
    # Deployment-wide skills (default <home>/skills): the worker loads them, the
    # chat page lists them as slash commands.
    skills_dir: str | None = None

    # Celery limits: every Celery service (worker, sandbox, library) builds its
    # app from these, and they must agree with the broker's visibility timeout.
    task_soft_time_limit_s: int = 240
    task_hard_time_limit_s: int = 300
    broker_visibility_timeout_s: int = 600

    # Service-to-service: the library's URL (the API proxies to it, the worker's
    # library_search calls it) and the token internal callers present.
    library_url: str = "http://127.0.0.1:8200"
    internal_token: str = DEV_INTERNAL_TOKEN

    @model_validator(mode="after")
    def _check_time_limits(self) -> CommonSettings:
        # A task that may outlive the visibility timeout gets redelivered while
        # still running: two workers would then advance one job at once.
        if self.task_hard_time_limit_s >= self.broker_visibility_timeout_s:
            raise ValueError(
                "task_hard_time_limit_s must be < broker_visibility_timeout_s "
                f"({self.task_hard_time_limit_s} >= {self.broker_visibility_timeout_s})"
            )
        if self.task_soft_time_limit_s >= self.task_hard_time_limit_s:
            raise ValueError("task_soft_time_limit_s must be < task_hard_time_limit_s")
        if self.env == "prod" and self.internal_token == DEV_INTERNAL_TOKEN:
            raise ValueError("set LEAFLAB_INTERNAL_TOKEN to a secret in prod")
        return self

    @property
    def workspaces_dir(self) -> Path:
        return self.workspace_root or (self.home / "workspaces")

    def require_database_url(self) -> str:
        if not self.database_url:
            raise RuntimeError("LEAFLAB_DATABASE_URL is not set (leaflab up sets it for you)")
        return self.database_url

    def require_redis_url(self) -> str:
        if not self.redis_url:
            raise RuntimeError("LEAFLAB_REDIS_URL is not set (leaflab up sets it for you)")
        return self.redis_url


@lru_cache(maxsize=1)
def get_settings() -> CommonSettings:
    """Process-wide settings; tests call ``get_settings.cache_clear()`` after env changes."""
    return CommonSettings()
