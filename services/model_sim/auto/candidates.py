"""Values harvested from a request's messages, for auto-mode replies to reuse.

A survey's structured calls ask for ids, citation keys and locators that must
point at real library chunks; the only place those exist is the prompt. So the
generator prefers what the messages contain over anything it makes up.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from services.model_sim.auto.sources import gather

_UUID = re.compile(
    r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)
# ``[@key]`` and ``[@a; @b]`` (pandoc citations): every @key inside brackets.
_CITE_GROUP = re.compile(r"\[(@[^\]]+)\]")
_CITE_KEY = re.compile(r"@([\w][\w:.\-/]*[\w])")
# ``"name": "value"`` / ``"name": 12`` as they appear in JSON shown to the model.
_NAMED = re.compile(r'"([A-Za-z_][\w\-]*)"\s*:\s*("(?:[^"\\\n]|\\.)*"|-?\d+(?:\.\d+)?)')
# ``name: value`` / ``name=value`` in prose, for bare tokens only (ids, pages, keys).
_NAMED_PLAIN = re.compile(r"\b([A-Za-z_][\w]*)\s*[:=]\s*([\w][\w:.\-/]*)")
_URL = re.compile(r"https?://[^\s\"'<>)\]]+")
_WORD = re.compile(r"[A-Za-z][A-Za-z\-']+")
# A field label in front of a note's sentence ("method: A Lyapunov …"): not prose.
_LABEL = re.compile(r"^[A-Za-z_][\w ]{0,24}:\s+")
# An instruction to the model ("Give 3-5 questions.", "Answer with JSON."): the
# asking, not the content, so it is quoted only when nothing else is there.
_IMPERATIVE = frozenset(
    "give write answer return list cite use reply respond output include make name "
    "keep say take note summarise summarize explain describe outline check propose "
    "suggest choose pick".split()
)
# "et al." and "e.g." end no sentence.
_SENTENCE_END = re.compile(r"(?<=[.!?])(?<! al\.)(?<!e\.g\.)(?<!i\.e\.)\s+|\n+")
# Flat JSON objects in a prompt (a chunk's locator, a search hit): one record each.
_FLAT_OBJECT = re.compile(r"\{[^{}]*\}")
# Leading words of a request that are not its topic ("Please summarize X" is about X).
_ASKING = frozenset(
    "please summarize summarise survey explain describe write give tell me about list "
    "what is are how does do the a an can you could would topic".split()
)
# Words that make poor topic words; the rest of the prompt reads as content.
STOPWORDS = frozenset(
    "a an and are as at be by can do does for from has have how i in into is it its "
    "me my of on or our please should so that the their them then there these this to "
    "us was we what when where which who why will with you your about give tell write "
    "short answer json object schema return".split()
)
# A line that opens a marked block: ``[@key] …`` (a paper's note) or ``[c1] …`` (a
# passage). The block runs to the next such line; its sentences are what a reply
# that names the marker (cites the key, points at the chunk) should say.
# A marker has a letter: ``[39]`` opening a reference entry inside a passage is no block.
_BLOCK_START = re.compile(r"^\[@?((?=[\w:.\-/]*[A-Za-z])[\w][\w:.\-/]*)\]", re.MULTILINE)
# Numeric citations inside a passage's sentence ("… datasets [33, 40].").
_NUMERIC_CITE = re.compile(r"\s*\[\d+(?:\s*[,;–-]\s*\d+)*\]")
MAX_BLOCKS = 400
# Cap on what is scanned: a long prompt does not make each reply slower.
MAX_SCAN_CHARS = 200_000


@dataclass(frozen=True)
class Candidates:
    """Everything reusable found in one request, in order of first appearance."""

    uuids: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()
    named: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    records: tuple[dict[str, Any], ...] = ()  # flat JSON objects, keys lower-cased
    sentences: tuple[str, ...] = ()  # from the last user message first, then the rest
    words: tuple[str, ...] = ()  # content words, same order
    topic: str = ""
    # Marker (citation key or chunk id) → the sentences of its block in the prompt.
    blocks: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # The record chosen for the object being filled: its values come first, so
    # one citation's document_id, chunk_id and page belong together.
    preferred: dict[str, Any] = field(default_factory=dict)

    def preferred_for(self, name: str) -> tuple[Any, ...]:
        lowered = name.lower()
        return (self.preferred[lowered],) if lowered in self.preferred else ()

    def for_name(self, name: str) -> tuple[Any, ...]:
        """Values the messages gave for a field of this name (case-insensitive)."""
        return self.preferred_for(name) + self.named.get(name.lower(), ())


def _unique(items: Iterable[Any]) -> tuple[Any, ...]:
    seen: dict[str, Any] = {}
    for item in items:
        seen.setdefault(json.dumps(item, sort_keys=True), item)
    return tuple(seen.values())


def _named_values(text: str) -> dict[str, tuple[Any, ...]]:
    found: dict[str, list[Any]] = {}
    for name, raw in _NAMED.findall(text):
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            continue
        found.setdefault(name.lower(), []).append(value)
    for name, raw in _NAMED_PLAIN.findall(text):
        found.setdefault(name.lower(), []).append(int(raw) if raw.isdigit() else raw)
    return {name: _unique(values) for name, values in found.items()}


def _records(text: str) -> tuple[dict[str, Any], ...]:
    found = []
    for raw in _FLAT_OBJECT.findall(text):
        try:
            record = json.loads(raw)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and len(record) >= 2:
            found.append({str(k).lower(): v for k, v in record.items()})
    return _unique(found)


def _is_prose(text: str) -> bool:
    """Reads as a sentence: no JSON or markup, mostly letters."""
    if any(c in text for c in "{}[]<>|") or '":' in text:
        return False
    letters = sum(c.isalpha() or c == " " for c in text)
    return len(_WORD.findall(text)) >= 3 and letters >= 0.75 * len(text)


def _sentences(text: str) -> list[str]:
    out = []
    for part in _SENTENCE_END.split(text):
        clean = _LABEL.sub("", " ".join(part.split()).strip(" -*#>`"))
        if _is_prose(clean):
            out.append(clean)
    return out


def _is_content(sentence: str, line_labels: bool) -> bool:
    """A statement worth quoting: not an instruction, not a bare "Label: value" line."""
    first = sentence.split()[0].lower().strip(",:") if sentence.split() else ""
    if first in _IMPERATIVE:
        return False
    return not line_labels or sentence[:1].isupper()


def _ranked(texts: list[str], *, content_only: bool = False) -> list[str]:
    """Sentences of ``texts`` in order, statements first, instructions and labels last
    (or left out, ``content_only``)."""
    content: list[str] = []
    rest: list[str] = []
    for text in texts:
        for part in _SENTENCE_END.split(text):
            flat = " ".join(part.split()).strip(" -*#>`")
            labelled = _LABEL.match(flat) is not None
            for sentence in _sentences(flat):
                # A block's labelled lines ("method: …") are its content whatever their case.
                keep = _is_content(sentence, labelled and not content_only)
                (content if keep else rest).append(sentence)
    return content + rest


def _blocks(texts: list[str]) -> dict[str, tuple[str, ...]]:
    """Each message's marked blocks (a block never runs on into the next message)."""
    found: dict[str, list[str]] = {}
    for text in texts:
        starts = list(_BLOCK_START.finditer(text[:MAX_SCAN_CHARS]))[:MAX_BLOCKS]
        for i, match in enumerate(starts):
            end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
            # The marker's own line names the block (a title, a locator): not its content.
            line_end = text.find("\n", match.end(), end)
            body = _NUMERIC_CITE.sub("", text[line_end if line_end >= 0 else end : end])
            # Statements only: the prompt's asking after the last block is not its content.
            sentences = [s for s in _ranked([body], content_only=True) if len(s) <= 400]
            # A marker whose block has no sentence (a table) is kept: naming it still
            # focuses a reply, on the other blocks' sentences.
            found.setdefault(match.group(1), []).extend(sentences)
    return {marker: _unique(sentences) for marker, sentences in found.items()}


def topic_of(text: str, max_words: int = 12) -> str:
    """The first sentence of ``text``, cut to a few words: what the user asked about."""
    sentences = _sentences(text)
    first = sentences[0] if sentences else " ".join(text.split())
    words = first.rstrip(".!?:").split()
    while len(words) > 1 and words[0].lower().strip(",:") in _ASKING:
        words = words[1:]
    return " ".join(words[:max_words])


def harvest(messages: list[dict[str, Any]]) -> Candidates:
    """Scan the user's requests and the tool results (latest request first) for values.

    System messages and the JSON protocol's tool descriptions are never scanned
    (see :mod:`services.model_sim.auto.sources`): replies must not quote the prompt.
    """
    sources = gather(messages)
    everything = "\n".join(sources.texts())[:MAX_SCAN_CHARS]
    last_user = sources.request[:MAX_SCAN_CHARS]
    keys = [k for group in _CITE_GROUP.findall(everything) for k in _CITE_KEY.findall(group)]
    named = _named_values(everything)
    for name in ("key", "citation_key", "cite_key"):
        keys.extend(v for v in named.get(name, ()) if isinstance(v, str) and v)
    prose = _ranked([last_user, everything])
    words = [w for w in _WORD.findall(last_user + "\n" + everything) if w.lower() not in STOPWORDS]
    return Candidates(
        uuids=_unique(u.lower() for u in _UUID.findall(everything)),
        keys=_unique(keys),
        urls=_unique(u.rstrip(".,;:") for u in _URL.findall(everything)),
        named=named,
        records=_records(everything),
        sentences=_unique(s for s in prose if len(s) <= 400)[:200],
        words=_unique(words)[:500],
        topic=topic_of(last_user or everything),
        blocks=_blocks(sources.texts()),
    )
