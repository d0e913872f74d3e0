"""The ``model_wait`` migration is reversible: down, a parked job goes back to the
queue (the old code knows no ``waiting_model``) and the columns go; up again, they
are back."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from alembic import command
from sqlalchemy import Engine, inspect, text
from sqlalchemy.orm import Session

from services.common.db import build_engine
from services.common.migrate import alembic_config, upgrade_to_head
from services.common.models import Job, User
from tests.conftest import PG_ADMIN_URL, SUFFIX, Stack
from tests.fixtures.scratch import create_database, drop_database


@pytest.fixture
def scratch_url(stack: Stack) -> Iterator[str]:
    name = f"leaflab_test_{SUFFIX}_mw"
    url = create_database(PG_ADMIN_URL, name)
    try:
        yield url
    finally:
        drop_database(PG_ADMIN_URL, name)


def _columns(engine: Engine) -> set[str]:
    return {c["name"] for c in inspect(engine).get_columns("jobs")}


def test_downgrade_requeues_waiting_jobs_and_upgrade_restores(scratch_url: str) -> None:
    upgrade_to_head(scratch_url)
    engine = build_engine(scratch_url, pool_size=1)
    try:
        assert {"model_wait_since", "model_wait"} <= _columns(engine)
        with Session(engine) as db, db.begin():
            user = User(email="model-wait@example.org")
            db.add(user)
            db.flush()
            db.add(Job(user_id=user.id, kind="turn", status="waiting_model"))
        command.downgrade(alembic_config(scratch_url), "lost_slices")
        engine.dispose()  # the column set changed under the pool
        assert not {"model_wait_since", "model_wait"} & _columns(engine)
        with engine.connect() as conn:
            assert conn.execute(text("SELECT status FROM jobs")).scalars().all() == ["queued"]
        upgrade_to_head(scratch_url)
        engine.dispose()
        assert {"model_wait_since", "model_wait"} <= _columns(engine)
    finally:
        engine.dispose()
