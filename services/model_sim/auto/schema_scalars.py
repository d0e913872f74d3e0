"""Scalar values for the filler: strings (by name, format and pattern) and numbers.

Value choice is the contract the survey pipeline relies on: a field named
like an id takes an id the request's messages contain, a citation-key field a
key the messages cite, anything else prose made from the messages. Among
several candidates the item's index picks one, so list items differ.
"""

from __future__ import annotations

import math
import random
import re
import uuid
from collections.abc import Iterable
from typing import Any, TypeGuard

from services.model_sim.auto.candidates import Candidates
from services.model_sim.auto.text import FILLER_WORDS, fit_length, string_for_field

# "id", "ids", "document_id", "chunk_ids", "documentId" — but not "valid" or "paid".
_ID_NAME = re.compile(r"(^|_)ids?$|[a-z]I[dD]s?$", re.IGNORECASE)
_KEY_NAMES = frozenset({"key", "keys", "cite", "cites", "citation", "citations"})
_URI_FORMATS = frozenset({"uri", "url", "iri", "uri-reference", "iri-reference"})
# Shapes a harvested candidate must have to stand in for a formatted string.
_FORMAT_SHAPES = {
    "date": re.compile(r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$"),
    "date-time": re.compile(
        r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$"
    ),
    "time": re.compile(r"^\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$"),
    "email": re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$"),
    "uri": re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:[^\s]+$"),
    "uuid": re.compile(r"^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$"),
}


def is_id_field(name: str) -> bool:
    return bool(name) and bool(_ID_NAME.search(name)) and not name.lower().endswith("valid")


# Flags that read as a problem; a plausible reply has none (so, say, a verify
# stage's claims come back supported unless a script says otherwise).
_PROBLEM_FLAG = re.compile(
    r"^(is_|has_)?(un|not_|non_|needs|missing|invalid|error|fail|fabricat|contradict|"
    r"hallucinat|wrong|incorrect|retracted|duplicate|truncated|skip)",
    re.IGNORECASE,
)


def boolean_for_field(name: str) -> bool:
    """True, except for flags named like a problem (``unsupported``, ``needs_checking``)."""
    return not _PROBLEM_FLAG.search(name)


def is_key_field(name: str) -> bool:
    lowered = name.lower()
    return lowered in _KEY_NAMES or lowered.endswith(("_key", "_keys"))


def deterministic_uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _pattern(schema: dict[str, Any]) -> re.Pattern[str] | None:
    raw = schema.get("pattern")
    if not isinstance(raw, str):
        return None
    try:
        return re.compile(raw)
    except re.error:
        return None  # an ECMA-262 feature Python lacks: the pattern is not checked


def _fits(value: str, schema: dict[str, Any], pattern: re.Pattern[str] | None) -> bool:
    fmt = str(schema.get("format", ""))
    shape = _FORMAT_SHAPES.get("uri" if fmt in _URI_FORMATS else fmt)
    if shape is not None and not shape.match(value):
        return False
    if len(value) < int(schema.get("minLength", 0)):
        return False
    if "maxLength" in schema and len(value) > int(schema["maxLength"]):
        return False
    return pattern is None or pattern.search(value) is not None


def _rotate(pool: list[str], index: int) -> list[str]:
    if not pool:
        return pool
    start = index % len(pool)
    return pool[start:] + pool[:start]


def _formatted(fmt: str, cands: Candidates, rng: random.Random, index: int) -> str | None:
    day = 1 + (index + rng.randrange(28)) % 28
    if fmt == "date":
        return f"2024-{1 + index % 12:02d}-{day:02d}"
    if fmt == "date-time":
        return f"2024-{1 + index % 12:02d}-{day:02d}T12:00:00Z"
    if fmt == "time":
        return "12:00:00Z"
    if fmt in ("email", "idn-email"):
        return f"author{index % 100}@example.org"
    if fmt in _URI_FORMATS:
        slug = "-".join(w.lower() for w in cands.words[index % 7 : index % 7 + 3]) or "item"
        return f"https://example.org/{slug}"
    if fmt == "uuid":
        return deterministic_uuid(rng)
    if fmt in ("hostname", "idn-hostname"):
        return "example.org"
    if fmt == "ipv4":
        return f"192.0.2.{1 + index % 254}"
    if fmt == "ipv6":
        return f"2001:db8::{1 + index % 1000:x}"
    return None


def string_value(
    schema: dict[str, Any], name: str, cands: Candidates, rng: random.Random, index: int
) -> str:
    """A string for ``schema`` at field ``name``, item ``index`` of its list."""
    fmt = str(schema.get("format", ""))
    pattern = _pattern(schema)
    # Tiers, best first: the chosen record's value, values the messages gave this
    # field name, then ids / keys / URLs found anywhere. The index rotates each tier.
    named = [v for v in cands.named.get(name.lower(), ()) if isinstance(v, str)]
    found: list[str] = []
    if is_id_field(name) or fmt == "uuid":
        found += list(cands.uuids)
    if is_key_field(name):
        found += list(cands.keys)
    if fmt in _URI_FORMATS:
        found += list(cands.urls)
    preferred = [v for v in cands.preferred_for(name) if isinstance(v, str)]
    for tier in (preferred, named, found):
        for value in _rotate(list(dict.fromkeys(tier)), index):
            if _fits(value, schema, pattern):
                return value
    made = _formatted(fmt, cands, rng, index) if fmt else None
    if made is None and is_id_field(name):
        made = deterministic_uuid(rng)
    if made is None and is_key_field(name):
        word = (cands.words[index % len(cands.words)] if cands.words else "source").lower()
        made = f"{re.sub(r'[^a-z]', '', word) or 'source'}{2015 + index % 10}"
    min_len = int(schema.get("minLength", 0))
    max_len = int(schema["maxLength"]) if "maxLength" in schema else None
    if made is None:
        made = string_for_field(name, cands, rng, index, min_len, max_len)
    made = fit_length(made, min_len, max_len if max_len is not None else max(len(made), min_len))
    if pattern is None or pattern.search(made):
        return made
    return _matching(pattern, schema, cands, made)


def _matching(
    pattern: re.Pattern[str], schema: dict[str, Any], cands: Candidates, made: str
) -> str:
    """Best effort for a pattern: the first harvested or stock string that matches."""
    named = (v for values in cands.named.values() for v in values if isinstance(v, str))
    stock = ("a", "A", "0", "1", "abc", "ABC", "a1", "x-1", "item", *FILLER_WORDS)
    pools: Iterable[str] = (
        *cands.keys,
        *cands.uuids,
        *named,
        *cands.words,
        *cands.sentences,
        *cands.urls,
        *stock,
    )
    for value in pools:
        if _fits(value, schema, pattern):
            return value
    for value in pools:
        found = pattern.search(value)
        if found and _fits(found.group(0), schema, pattern):
            return found.group(0)
    return made  # unsupported pattern: the reply may not match it (see README)


Bound = tuple[float, bool] | None  # (value, exclusive)


def _bound(schema: dict[str, Any], inclusive_key: str, exclusive_key: str, upper: bool) -> Bound:
    plain, excl = schema.get(inclusive_key), schema.get(exclusive_key)
    found: list[tuple[float, bool]] = []
    if _num(plain):
        found.append((float(plain), excl is True))  # draft 4: exclusive* is a flag on the bound
    if _num(excl):
        found.append((float(excl), True))
    if not found:
        return None
    # The tighter bound wins; at a tie the exclusive one.
    key = (lambda b: (b[0], b[1])) if not upper else (lambda b: (-b[0], b[1]))
    return max(found, key=key)


def _num(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _inside(value: float, lo: Bound, hi: Bound) -> bool:
    if lo is not None and (value < lo[0] or (lo[1] and value == lo[0])):
        return False
    return hi is None or not (value > hi[0] or (hi[1] and value == hi[0]))


def number_value(
    schema: dict[str, Any], name: str, cands: Candidates, rng: random.Random, *, integer: bool
) -> int | float:
    """A number within the schema's bounds; a value the messages gave this field if it fits."""
    lo = _bound(schema, "minimum", "exclusiveMinimum", upper=False)
    hi = _bound(schema, "maximum", "exclusiveMaximum", upper=True)
    for value in cands.for_name(name):
        if not _num(value) or (integer and not float(value).is_integer()):
            continue
        if _inside(value, lo, hi):
            return int(value) if integer else value
    if integer:
        return _integer(schema, lo, hi, rng)
    low = lo[0] if lo is not None else (hi[0] - 10 if hi is not None else 1.0)
    high = hi[0] if hi is not None else low + 10
    if high <= low:
        return low  # contradictory or a single point: best effort
    exact = low + (high - low) * (0.25 + 0.5 * rng.random())
    rounded = round(exact, 2)
    return rounded if _inside(rounded, lo, hi) else exact


def _integer(schema: dict[str, Any], lo: Bound, hi: Bound, rng: random.Random) -> int:
    low = None if lo is None else (math.floor(lo[0]) + 1 if lo[1] else math.ceil(lo[0]))
    high = None if hi is None else (math.ceil(hi[0]) - 1 if hi[1] else math.floor(hi[0]))
    if low is None:
        low = high - 10 if high is not None else 1
    if high is None:
        high = low + 10
    high = max(high, low)  # contradictory bounds: best effort
    value = rng.randint(low, high)
    step = schema.get("multipleOf")
    if isinstance(step, int) and step > 0 and value % step:
        up = value + step - value % step
        value = up if up <= high else value - value % step
    return value
