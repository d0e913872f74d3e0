"""Bounds that make a stage's structured reply fit the tokens it may use.

A schema without bounds lets a model write until ``max_tokens`` cuts the reply
in the middle of a string: small models and base models that never end a turn
do exactly that, and the stage fails as truncated even after its repair. The
schema *sent* therefore carries ``maxLength`` on every free-text string and
``maxItems`` on every array, sized so that the whole object fits the reply's
token limit. Servers that decode under a grammar (llama.cpp, vLLM's guided
decoding) then close each string in time; others read the bounds as guidance.

The reply is still *checked* against the unbounded schema: a longer answer that
parses is a good answer, and a bound is never a new way to fail.

Prose runs about three characters a token, but a note that copies a passage's table
or numbers does not (a tokenizer that splits digits spends a token on each): when a
reply is cut anyway, its repair is fitted with the density the cut reply itself
showed (``repair_density``), so the repair asks for less in its bounds, not only in
its words.
"""

from __future__ import annotations

import copy
from typing import Any

# Conservative for prose in BPE/SentencePiece vocabularies (English runs ~4).
CHARS_PER_TOKEN = 3.0
# JSON's own characters (keys, enum values, quotes, braces, the newlines and
# indents servers emit between them) tokenize densely: about two per token.
STRUCTURE_CHARS_PER_TOKEN = 2.0
# Kept free of the limit: a server may add a token or two the count cannot see.
SLACK = 0.9
# llama.cpp turns a bounded string into a repetition of that many grammar items:
# with llama-cpp-python 0.3.36 a 1,000-character bound took 20 s to compile and
# 1,500 crashed the server, 600 compiles in about a second. Longer text is more
# items, never longer ones.
MAX_TEXT_CHARS = 600
MIN_TEXT_CHARS = 24
ARRAY_CAPS = (8, 6, 4, 3, 2, 1)
# A repair is fitted below the density its cut reply showed, never under the floor
# (one token for two characters: byte-level pieces of unusual text).
REPAIR_MARGIN = 0.6
MIN_CHARS_PER_TOKEN = 0.5


def fit_to_reply(
    schema: dict[str, Any], *, max_tokens: int, chars_per_token: float = CHARS_PER_TOKEN
) -> dict[str, Any]:
    """A copy of ``schema`` with ``maxItems``/``maxLength`` bounds whose largest
    reply fits ``max_tokens`` when free text runs ``chars_per_token``; bounds already
    in the schema are kept when tighter. Arrays shrink (8 items, then 6, 4, …)
    before strings go under MIN_TEXT_CHARS."""
    chars = MIN_TEXT_CHARS
    cap = ARRAY_CAPS[-1]
    for cap in ARRAY_CAPS:
        slots, fixed = _measure(schema, cap)
        if slots == 0:
            break
        chars = int((max_tokens * SLACK - fixed) * chars_per_token / slots)
        if chars >= MIN_TEXT_CHARS:
            break
    bounded = copy.deepcopy(schema)
    _bound(bounded, cap, max(MIN_TEXT_CHARS, min(chars, MAX_TEXT_CHARS)))
    return bounded


def repair_density(cut_reply: str, tokens: int) -> float:
    """Characters per token to fit the repair of a reply cut after ``tokens`` tokens:
    under what the cut reply itself used (and never above the first fit's), so a
    model that writes the same way again fits."""
    observed = len(cut_reply) / max(1, tokens)
    return max(MIN_CHARS_PER_TOKEN, min(CHARS_PER_TOKEN, observed) * REPAIR_MARGIN)


def _is_text(node: dict[str, Any]) -> bool:
    return node.get("type") == "string" and "enum" not in node and "const" not in node


def _items(node: dict[str, Any], cap: int) -> int:
    items = node.get("items")
    if isinstance(items, dict) and "enum" in items:
        cap = min(cap, len(items["enum"]))  # naming one value twice says nothing more
    wanted = int(node.get("maxItems", cap))
    return max(int(node.get("minItems", 0)), min(wanted, cap))


def _structure(chars: int) -> float:
    return chars / STRUCTURE_CHARS_PER_TOKEN


def _measure(node: Any, cap: int) -> tuple[int, float]:
    """(free-text strings, tokens of everything else) of the largest reply."""
    if not isinstance(node, dict):
        return 0, 0.0
    kind = node.get("type")
    if kind == "object":
        slots, fixed = 0, _structure(4)
        for name, child in node.get("properties", {}).items():
            child_slots, child_fixed = _measure(child, cap)
            slots += child_slots
            fixed += child_fixed + _structure(len(name) + 6)  # "name": , and its line
        return slots, fixed
    if kind == "array":
        count = _items(node, cap)
        child_slots, child_fixed = _measure(node.get("items", {}), cap)
        return child_slots * count, (child_fixed + _structure(3)) * count + _structure(4)
    if _is_text(node):
        return 1, _structure(2)
    if "enum" in node:
        return 0, _structure(max((len(str(v)) for v in node["enum"]), default=0) + 2)
    return 0, _structure(12)  # a number or a boolean


def _bound(node: Any, cap: int, chars: int) -> None:
    if not isinstance(node, dict):
        return
    kind = node.get("type")
    if kind == "object":
        for child in node.get("properties", {}).values():
            _bound(child, cap, chars)
    elif kind == "array":
        node["maxItems"] = _items(node, cap)
        _bound(node.get("items"), cap, chars)
    elif _is_text(node):
        node["maxLength"] = min(int(node.get("maxLength", chars)), chars)
