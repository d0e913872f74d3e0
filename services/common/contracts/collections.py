"""A library collection as a typed value, spelled as text in exactly one place.

A document belongs to one collection: a member's personal library
(``user:<uuid>``), a project's (``project:<uuid>``) or the lab's (``lab``). That
text is stored in rows (``documents.collection``, import targets), in the vector
and lexical indexes' payloads and in the library service's JSON, so it must never
change; this module is the only one that builds or parses it.

Guarantee: a ``Collection`` only ever holds one of those three canonical
spellings (lower-case kind, canonical lower-case hyphenated UUID); ``parse``
refuses anything else with a ``ValueError`` saying what was wrong.

Why a ``str`` subclass rather than a frozen dataclass: the value *is* its
storage text, so every edge (SQLAlchemy ``String`` column, JSON bodies, Qdrant
and Edge payloads, Celery arguments, saved indexes) carries it unchanged with no
conversion layer to forget, while a function typed ``Collection`` still tells the
type checker, and the reader, that only a validated value gets in. Equality and
hashing are the text's, so a ``Collection`` read back from storage equals the one
that was written.
"""

from __future__ import annotations

import uuid
from enum import StrEnum
from typing import Any

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

# Longer than any valid spelling ("project:" + 36); refuse early, before any work.
_MAX_LEN = len("project:") + 36


class CollectionKind(StrEnum):
    USER = "user"
    PROJECT = "project"
    LAB = "lab"


def _canonical_uuid(kind: str, ident: str) -> uuid.UUID:
    try:
        value = uuid.UUID(ident)
    except ValueError:
        raise ValueError(f"collection {kind}:<id> needs a UUID, got {ident[:40]!r}") from None
    # Only the canonical spelling: "user:ABC…" and "user:{…}" would name the same
    # owner under a different text, and text is what rows and indexes compare.
    if str(value) != ident:
        raise ValueError(f"collection {kind}:<id> needs a lower-case hyphenated UUID")
    return value


class Collection(str):
    """One of ``user:<uuid>``, ``project:<uuid>`` or ``lab``; see the module doc."""

    __slots__ = ()

    LAB: Collection  # set below the class

    def __new__(cls, text: object) -> Collection:
        if isinstance(text, Collection):
            return text
        if not isinstance(text, str):
            raise ValueError(f"collection must be text, got {type(text).__name__}")
        if len(text) > _MAX_LEN:
            raise ValueError(f"collection is too long ({len(text)} characters)")
        if text != CollectionKind.LAB.value:
            kind, sep, ident = text.partition(":")
            if not sep or kind not in (CollectionKind.USER, CollectionKind.PROJECT):
                raise ValueError(
                    f'collection must be "lab", "user:<uuid>" or "project:<uuid>", got {text!r}'
                )
            _canonical_uuid(kind, ident)
        return super().__new__(cls, text)

    @classmethod
    def parse(cls, text: object) -> Collection:
        """The collection ``text`` spells; ``ValueError`` for anything else."""
        return cls(text)

    @classmethod
    def personal(cls, user_id: uuid.UUID) -> Collection:
        return cls(f"{CollectionKind.USER.value}:{uuid.UUID(str(user_id))}")

    @classmethod
    def project(cls, project_id: uuid.UUID) -> Collection:
        return cls(f"{CollectionKind.PROJECT.value}:{uuid.UUID(str(project_id))}")

    @classmethod
    def lab(cls) -> Collection:
        return cls(CollectionKind.LAB.value)

    @property
    def kind(self) -> CollectionKind:
        return CollectionKind(self.partition(":")[0])

    @property
    def key(self) -> str:
        """The storage and wire text (a plain ``str``)."""
        return str.__str__(self)

    @property
    def owner_id(self) -> uuid.UUID | None:
        """The member whose personal library this is; None for the others."""
        return uuid.UUID(self.partition(":")[2]) if self.kind is CollectionKind.USER else None

    @property
    def project_id(self) -> uuid.UUID | None:
        """The project this collection belongs to; None for the others."""
        return uuid.UUID(self.partition(":")[2]) if self.kind is CollectionKind.PROJECT else None

    def __repr__(self) -> str:
        return f"Collection({self.key!r})"

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        # Validate through ``parse`` (a ValueError becomes a 422 naming the field);
        # serialise as the plain text, so responses are unchanged.
        return core_schema.no_info_after_validator_function(
            cls.parse,
            core_schema.str_schema(),
            serialization=core_schema.plain_serializer_function_ser_schema(
                str.__str__, when_used="always"
            ),
        )


Collection.LAB = Collection.lab()
