"""What the API writes to its log and how it serves untrusted files.

Logs carry ids, routes and error classes, never message text, inputs or SQL
parameters. Artifacts (files the model's code wrote) never render in the
API's origin: ``nosniff`` always, attachments unless a raster image.
"""

from __future__ import annotations

import logging
import secrets
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from services.api.log_privacy import DropDatabaseErrorText
from services.cli.up.commands import uvicorn_argv
from services.common.db import build_engine, transaction
from services.common.models import Artifact
from tests.conftest import Stack
from tests.fixtures.builders import client_for, make_user
from tests.fixtures.processes import Proc, Services, free_port, wait_http


@dataclass
class LoggedApi:
    url: str
    proc: Proc


@pytest.fixture(scope="module")
def logged_api(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoggedApi]:
    """An API at log level debug, access log on: the most it will ever write."""
    svc = Services(stack, tmp_path_factory.mktemp("logs"))
    try:
        port = free_port()
        argv = uvicorn_argv(
            "services.api.app:create_app", host="127.0.0.1", port=port, log_level="debug"
        )
        proc = svc._spawn("api", argv)
        url = f"http://127.0.0.1:{port}"
        wait_http(f"{url}/healthz", proc)
        yield LoggedApi(url, proc)
    finally:
        svc.stop()


class TestLogs:
    def test_api_log_has_ids_not_user_text(
        self, logged_api: LoggedApi, session_factory: sessionmaker[Session]
    ) -> None:
        client = client_for(logged_api.url, make_user(session_factory))
        secret = "confidential-" + secrets.token_hex(8)
        session = client.post("/v1/sessions", json={"title": secret, "system_prompt": secret})
        assert session.status_code == 201
        sid = session.json()["id"]
        posted = client.post(f"/v1/sessions/{sid}/messages", json={"content": secret})
        assert posted.status_code == 202
        nul = client.post(f"/v1/sessions/{sid}/messages", json={"content": secret + "\x00"})
        assert nul.status_code == 422
        assert client.get("/v1/jobs", params={"kind": secret}).status_code == 422
        assert client.get("/v1/jobs", params={"status": "queued", "q": secret}).status_code == 200
        log = logged_api.proc.log()
        assert posted.json()["job_id"] and f"/v1/sessions/{sid}/messages" in log  # it does log
        assert secret not in log

    def test_engine_errors_carry_no_statement_parameters(self, stack: Stack) -> None:
        engine: Engine = build_engine(stack.database_url, pool_size=1)
        secret = "confidential-" + secrets.token_hex(8)
        try:
            with pytest.raises(DBAPIError) as caught, engine.begin() as conn:
                # Too long for the column: PostgreSQL's own message does not quote it.
                conn.execute(
                    text("INSERT INTO users (id, email) VALUES (:id, :email)"),
                    {"id": uuid.uuid4(), "email": secret * 40},
                )
            assert secret not in str(caught.value)
        finally:
            engine.dispose()

    def test_unhandled_database_error_is_logged_by_class_only(self) -> None:
        secret = "confidential-" + secrets.token_hex(8)
        try:
            raise DBAPIError(
                "INSERT INTO messages (content) VALUES (%(c)s)",
                {"c": secret},
                Exception(f"Key (content)=({secret}) already exists"),
            )
        except DBAPIError:
            record = logging.LogRecord(
                "uvicorn.error",
                logging.ERROR,
                __file__,
                1,
                "Exception in ASGI application",
                None,
                sys.exc_info(),
            )
        assert DropDatabaseErrorText().filter(record)
        formatted = logging.Formatter().format(record)
        assert secret not in formatted and "DBAPIError" in formatted


def _artifact(factory: sessionmaker[Session], job_id: str, name: str, mime: str) -> None:
    with transaction(factory) as db:
        db.add(
            Artifact(
                job_id=uuid.UUID(job_id),
                name=name,
                mime=mime,
                size=5,
                sha256="0" * 64,
                content=b"<svg/",
            )
        )


class TestArtifacts:
    @pytest.mark.parametrize(
        ("name", "mime", "disposition", "served_as"),
        [
            ("plots/fig.png", "image/png", "inline", "image/png"),
            ("report.html", "text/html", "attachment", "text/html"),
            ("logo.svg", "image/svg+xml", "attachment", "image/svg+xml"),
            ("data.csv", "text/csv; charset=utf-8", "attachment", "text/csv"),
            ("weird.bin", "text/html\r\nX-Injected: 1", "attachment", "application/octet-stream"),
        ],
    )
    def test_downloads_are_nosniff_and_attachments_unless_images(
        self,
        logged_api: LoggedApi,
        session_factory: sessionmaker[Session],
        name: str,
        mime: str,
        disposition: str,
        served_as: str,
    ) -> None:
        client = client_for(logged_api.url, make_user(session_factory))
        job_id = client.post("/v1/jobs", json={"kind": "turn", "input": {"content": "x"}}).json()[
            "id"
        ]
        _artifact(session_factory, job_id, name, mime)
        (item,) = client.get(f"/v1/jobs/{job_id}/artifacts").json()["items"]
        resp = client.get(item["url"])
        assert resp.status_code == 200 and resp.content == b"<svg/"
        assert resp.headers["x-content-type-options"] == "nosniff"
        assert resp.headers["content-type"].split(";")[0] == served_as
        assert resp.headers["content-disposition"].split(";")[0] == disposition
        assert "x-injected" not in resp.headers

    def test_artifact_names_are_shown_without_control_characters(
        self, logged_api: LoggedApi, session_factory: sessionmaker[Session]
    ) -> None:
        client = client_for(logged_api.url, make_user(session_factory))
        job_id = client.post("/v1/jobs", json={"kind": "turn", "input": {"content": "x"}}).json()[
            "id"
        ]
        # (A newline would not even route: Starlette's path pattern stops at one.)
        hostile = "out/evil\u202egnp.exe\t\x1b[31m\x07"
        _artifact(session_factory, job_id, hostile, "application/octet-stream")
        (item,) = client.get(f"/v1/jobs/{job_id}/artifacts").json()["items"]
        assert item["name"] == hostile  # the key stays exact, for the download URL
        assert item["display_name"] == "evilgnp.exe[31m"
        resp = client.get(item["url"])
        assert resp.status_code == 200
        assert resp.headers["content-disposition"] == (
            "attachment; filename*=UTF-8''evilgnp.exe%5B31m"
        )
