"""The API's logs name routes, ids and error classes, never what users wrote.

- uvicorn's access log prints each request line with its query string, and
  query strings carry user text (a search ``q=…``, a filter): the query is
  dropped, the path (ids only) kept.
- An unhandled database error is logged by uvicorn with its traceback, whose
  text quotes the statement and PostgreSQL's detail (``Key (email)=(…)``):
  for those, the log keeps the exception class and the route, not the text.
  (Statement parameters are also hidden at the engine: ``hide_parameters``.)
"""

from __future__ import annotations

import logging

from sqlalchemy.exc import StatementError


class DropQueryStrings(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        # uvicorn.access: (client_addr, method, full_path, http_version, status)
        if isinstance(args, tuple) and len(args) == 5 and isinstance(args[2], str):
            path, sep, _ = args[2].partition("?")
            record.args = (args[0], args[1], path + ("?…" if sep else ""), args[3], args[4])
        return True


class DropDatabaseErrorText(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, StatementError):
            origin = type(exc.orig).__name__ if exc.orig is not None else "unknown"
            record.msg = "unhandled database error %s (%s); statement and values not logged"
            record.args = (type(exc).__name__, origin)
            record.exc_info = None
            record.exc_text = None
        return True


def install_log_filters() -> None:
    """Attach the filters to uvicorn's loggers (idempotent)."""
    for name, flt in (
        ("uvicorn.access", DropQueryStrings()),
        ("uvicorn.error", DropDatabaseErrorText()),
    ):
        logger = logging.getLogger(name)
        if not any(type(f) is type(flt) for f in logger.filters):
            logger.addFilter(flt)
