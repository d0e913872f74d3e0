"""The column type of every ``collection`` column: text in SQL, a ``Collection`` in Python.

Guarantee: a row's collection is checked before the statement is sent (an INSERT,
an UPDATE or a filter's parameter), and a value ``Collection.parse`` refuses
raises ``ValueError`` naming the column, so a malformed collection never becomes
a row that no reader can match; every value read back is a ``Collection``.

Why a ``TypeDecorator`` rather than a ``@validates`` hook: it also checks the
parameters of ``where(Document.collection == ...)`` and ``.in_(...)`` and the
values of Core ``insert()``/``update()`` statements, which skip ORM attribute
events; and the SQL type is unchanged (``VARCHAR(100)``), so no migration.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from sqlalchemy import Dialect, String
from sqlalchemy.types import TypeDecorator

from services.common.contracts.collections import Collection

# A library holds few collections (one per member, project and the lab) and a
# listing reads the same few texts over and over: each text is parsed once, not
# once per row (parsing is a UUID parse, ~5 µs; a 1000-row listing paid 5 ms).
# A Collection is immutable, so sharing one instance between rows is safe.
_read = lru_cache(maxsize=4096)(Collection.parse)


class CollectionText(TypeDecorator[Collection]):
    """``VARCHAR(100)`` holding a collection's storage text; ``column`` names it in errors."""

    impl = String(100)
    cache_ok = True

    def __init__(self, column: str) -> None:
        super().__init__()
        # Part of the statement cache key (cache_ok): a plain hashable string.
        self.column = column

    def process_bind_param(self, value: Any, dialect: Dialect) -> str | None:
        if value is None:
            return None
        try:
            return Collection.parse(value).key
        except ValueError as exc:
            raise ValueError(f"{self.column}: {exc}") from None

    def process_result_value(self, value: Any, dialect: Dialect) -> Collection | None:
        return None if value is None else _read(value)
