"""The API's request log names routes and ids, never what users wrote.

uvicorn's access log prints each request line with its query string, and
query strings carry user text (a library search ``q=…``, a filter). The
filter below keeps the path (ids only) and drops the query.
"""

from __future__ import annotations

import logging


class DropQueryStrings(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        # uvicorn.access: (client_addr, method, full_path, http_version, status)
        if isinstance(args, tuple) and len(args) == 5 and isinstance(args[2], str):
            path, sep, _ = args[2].partition("?")
            record.args = (args[0], args[1], path + ("?…" if sep else ""), args[3], args[4])
        return True


def install_access_log_filter() -> None:
    logger = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, DropQueryStrings) for f in logger.filters):
        logger.addFilter(DropQueryStrings())
