"""Alembic environment: one metadata (services.common.models), URL from settings."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from services.common.models import Base
from services.common.settings import get_settings

target_metadata = Base.metadata


def _url() -> str:
    configured = context.config.get_main_option("sqlalchemy.url")
    return configured or get_settings().require_database_url()


def run_offline() -> None:
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    engine = create_engine(_url())
    with engine.connect() as connection:
        context.configure(connection=connection, target_metadata=target_metadata)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
