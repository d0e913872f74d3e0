"""Operator entry points the API exports for the `leaflab` command (run on the database).

The first admin cannot be created over HTTP: no key exists yet to authorise
the request, and an unauthenticated "create the first admin" route would give
the platform to whoever called it first. `leaflab up` calls this instead; the
rules for users and keys stay in ``api/admin/service.py``.
"""

from __future__ import annotations

from services.api.admin.service import ensure_admin
from services.common.db import build_engine, build_sessionmaker, transaction


def bootstrap_first_admin(database_url: str, *, email: str) -> str | None:
    """Create the admin ``email`` once; its plaintext key when created now, else None."""
    engine = build_engine(database_url, pool_size=1)
    try:
        with transaction(build_sessionmaker(engine)) as db:
            _, key = ensure_admin(db, email=email)
    finally:
        engine.dispose()
    return key
