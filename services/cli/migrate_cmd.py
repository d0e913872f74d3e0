"""`leaflab migrate`: bring the configured database to the code's schema."""

from __future__ import annotations

import click

from services.common.migrate import upgrade_to_head
from services.common.settings import CommonSettings


@click.command()
def migrate() -> None:
    """Apply Alembic migrations to LEAFLAB_DATABASE_URL."""
    upgrade_to_head(CommonSettings().require_database_url())
    click.echo("database is at the latest migration")
