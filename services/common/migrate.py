"""Apply and check Alembic migrations from code (used by `leaflab up` and tests)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

from services.common.db import current_revision

ROOT = Path(__file__).resolve().parents[2]


def alembic_config(database_url: str) -> Config:
    cfg = Config(str(ROOT / "alembic.ini"))
    cfg.set_main_option("script_location", str(ROOT / "migrations"))
    cfg.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return cfg


def upgrade_to_head(database_url: str) -> None:
    command.upgrade(alembic_config(database_url), "head")


def head_revision(database_url: str) -> str | None:
    return ScriptDirectory.from_config(alembic_config(database_url)).get_current_head()


def ensure_migrated(engine: Engine, database_url: str) -> None:
    """Refuse to start on a database that is not at the code's migration head."""
    current, head = current_revision(engine), head_revision(database_url)
    if current != head:
        raise RuntimeError(
            f"database is at migration {current!r} but the code expects {head!r}; "
            "run `leaflab migrate` (leaflab up does this for you)"
        )
