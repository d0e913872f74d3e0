"""A dependency that is down is a 503 with a clear body, never a 500 or a hang.

When Redis or PostgreSQL restarts, requests in that window fail on the
connection, not on anything the client did. They get
``503 {"error": {"code": "unavailable", ...}}`` with ``Retry-After`` so clients
and load balancers back off and retry; a 500 would say "bug" and send people to
the logs. With psycopg, refused connections, "the database system is starting
up", terminated sessions and connect timeouts are all OperationalError;
errors that are not about reaching the dependency (a constraint violation, a
bad query) are other classes and still surface as 500s: they are bugs.
"""

from __future__ import annotations

import logging

import redis.exceptions
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from kombu.exceptions import OperationalError as BrokerError
from sqlalchemy.exc import InterfaceError as DbInterfaceError
from sqlalchemy.exc import OperationalError as DbOperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from services.common.contracts.errors import error_body

log = logging.getLogger(__name__)

# Long enough for a restart to finish, short enough for an interactive client.
RETRY_AFTER_S = 2


def unavailable(what: str) -> JSONResponse:
    body = error_body(
        "unavailable",
        f"{what} is unavailable right now (restarting or unreachable); retry shortly",
        {"dependency": what.lower()},
    )
    return JSONResponse(body, status_code=503, headers={"Retry-After": str(RETRY_AFTER_S)})


def install_outage_handlers(app: FastAPI) -> None:
    """Map connection-level failures of Redis, the broker and Postgres to 503."""

    async def _redis(_: Request, exc: Exception) -> JSONResponse:
        log.warning("redis unavailable: %s", exc)
        return unavailable("Redis")

    async def _broker(_: Request, exc: Exception) -> JSONResponse:
        log.warning("message broker unavailable: %s", exc)
        return unavailable("Redis")

    async def _database(_: Request, exc: Exception) -> JSONResponse:
        log.warning("database unavailable: %s", exc)
        return unavailable("Database")

    app.add_exception_handler(redis.exceptions.ConnectionError, _redis)
    app.add_exception_handler(redis.exceptions.TimeoutError, _redis)
    app.add_exception_handler(BrokerError, _broker)
    app.add_exception_handler(DbOperationalError, _database)
    app.add_exception_handler(DbInterfaceError, _database)
    app.add_exception_handler(PoolTimeout, _database)
