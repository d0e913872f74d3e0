"""The real API app (create_app, lifespan and middleware) wired to a test library."""

from __future__ import annotations

import os
import secrets
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from services.api.app import create_app
from services.api.deps import hash_key
from services.api.library.service import intake_settings
from services.api.settings import ApiSettings
from services.common.documents.settings import IntakeSettings
from services.common.models import ApiKey, User
from tests.library.conftest import TOKEN


def user_with_key(db: Session, email: str) -> tuple[User, str]:
    user = User(email=email)
    db.add(user)
    db.flush()
    key = "lf_" + secrets.token_urlsafe(24)
    db.add(ApiKey(user_id=user.id, key_hash=hash_key(key), prefix=key[:8]))
    return user, key


@contextmanager
def api_client(
    *,
    library_url: str,
    files_dir: Path,
    max_upload_bytes: int = 100_000_000,
    max_import_bytes: int = 20_000_000,
    redis_url: str | None = None,
    intake_overrides: dict[str, object] | None = None,
) -> Iterator[TestClient]:
    overrides: dict[str, object] = {"library_url": library_url, "internal_token": TOKEN}
    if redis_url:
        overrides["redis_url"] = redis_url
    app = create_app(ApiSettings(**overrides))  # type: ignore[arg-type]
    intake = IntakeSettings(
        files_dir=files_dir,
        max_upload_bytes=max_upload_bytes,
        max_import_bytes=max_import_bytes,
        **(intake_overrides or {}),  # type: ignore[arg-type]
    )
    app.dependency_overrides[intake_settings] = lambda: intake
    # The app runs inside the test process: its lifespan must not install (and
    # then shut down) this process's one global tracer provider, which the
    # telemetry tests install for themselves.
    previous = os.environ.get("LEAFLAB_TRACING_ENABLED")
    os.environ["LEAFLAB_TRACING_ENABLED"] = "false"
    try:
        with TestClient(app) as client:
            yield client
    finally:
        if previous is None:
            os.environ.pop("LEAFLAB_TRACING_ENABLED", None)
        else:
            os.environ["LEAFLAB_TRACING_ENABLED"] = previous


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def new_email(tag: str) -> str:
    return f"{tag}-{uuid.uuid4().hex[:8]}@example.org"
