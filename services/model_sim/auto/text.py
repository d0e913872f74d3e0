"""Plausible prose for auto mode: phrases and sentences made from the request's own words."""

from __future__ import annotations

import random

from services.model_sim.auto.candidates import Candidates
from services.model_sim.auto.sources import ToolResult
from services.model_sim.auto.tool_inputs import result_lines, subject

# Strings with no maxLength stay short: a reply is a stand-in, not an essay.
DEFAULT_MAX_CHARS = 160
PARAGRAPH_MAX_CHARS = 600
FILLER_WORDS = ("results", "method", "analysis", "evidence", "study", "approach", "data")
# Field names that read as labels (a few words) rather than as sentences.
SHORT_FIELDS = frozenset(
    "title name heading label section query term keyword keywords tag tags venue "
    "author authors status kind type category question topic".split()
)


def fit_length(text: str, min_len: int, max_len: int) -> str:
    """Cut at a word boundary to ``max_len``, pad with words up to ``min_len``."""
    text = " ".join(text.split())
    if len(text) > max_len:
        cut = text[:max_len]
        space = cut.rfind(" ")
        text = cut[:space] if space >= max(1, max_len // 2) else cut
        text = text.rstrip(" ,;:")
    i = 0
    while len(text) < min_len:
        word = FILLER_WORDS[i % len(FILLER_WORDS)]
        text = f"{text} {word}".strip() if text else word
        i += 1
    return text[:max_len] if len(text) > max_len else text


def phrase(cands: Candidates, rng: random.Random, *, words: int = 5) -> str:
    """A few content words from the messages (or neutral filler when there are none)."""
    pool = list(cands.words) or list(FILLER_WORDS)
    start = rng.randrange(len(pool))
    picked = [pool[(start + i) % len(pool)] for i in range(min(words, len(pool)))]
    return " ".join(picked)


def sentence(cands: Candidates, rng: random.Random, index: int = 0) -> str:
    """A sentence from the messages, varied by ``index`` so list items differ."""
    if cands.sentences:
        # Mostly the last user message's sentences (listed first), sometimes the rest.
        head = min(len(cands.sentences), 6)
        pool = cands.sentences if rng.random() < 0.3 else cands.sentences[:head]
        return pool[(rng.randrange(len(pool)) + index) % len(pool)]
    topic = cands.topic or phrase(cands, rng)
    return f"This point concerns {topic}." if topic else "This point needs no further detail."


# Fields that hold running text: a few sentences, not one.
PARAGRAPH_FIELDS = frozenset("text paragraph body content summary section prose".split())


def paragraph(cands: Candidates, rng: random.Random, index: int, max_len: int) -> str:
    """Up to three different sentences from the messages, in their order (a paragraph)."""
    if not cands.sentences:
        return sentence(cands, rng, index)
    start = (rng.randrange(len(cands.sentences)) + 3 * index) % len(cands.sentences)
    picked = [cands.sentences[(start + i) % len(cands.sentences)] for i in range(3)]
    text = ""
    for part in dict.fromkeys(picked):
        joined = f"{text} {part}".strip()
        if text and len(joined) > max_len:
            break
        text = joined
    return text


def string_for_field(
    name: str, cands: Candidates, rng: random.Random, index: int, min_len: int, max_len: int | None
) -> str:
    """Prose for a string field with no better source: a label or a sentence."""
    long_text = name.lower() in PARAGRAPH_FIELDS
    limit = (
        max_len
        if max_len is not None
        else (PARAGRAPH_MAX_CHARS if long_text else DEFAULT_MAX_CHARS)
    )
    special = _tool_argument(name.lower(), cands, rng)
    if special is not None and len(special) <= limit:
        return fit_length(special, min_len, max(limit, min_len))
    if "question" in name.lower() and limit >= 40:
        text = _question(cands, index)
    elif long_text and limit >= 200:
        text = paragraph(cands, rng, index, limit)
    elif name.lower() in SHORT_FIELDS or limit < 40:
        text = phrase(cands, rng, words=3 + (index % 4))
        text = text[:1].upper() + text[1:]
    else:
        text = sentence(cands, rng, index)
    return fit_length(text, min_len, max(limit, min_len))


_QUESTIONS = (
    "What do the papers report about {}?",
    "Which methods are used for {}?",
    "What limits current work on {}?",
    "How is {} evaluated?",
    "Which open problems remain in {}?",
)


def _question(cands: Candidates, index: int) -> str:
    """A research question about the request's topic (not an instruction it contains)."""
    topic = cands.topic.rstrip(".?!") or "the topic"
    return _QUESTIONS[index % len(_QUESTIONS)].format(topic)


def _tool_argument(name: str, cands: Candidates, rng: random.Random) -> str | None:
    """Arguments an agent's tools run: code that runs, a path that is a path."""
    words = phrase(cands, rng, words=3)
    slug = "-".join(w.lower() for w in words.split()) or "notes"
    if name in ("code", "source", "script", "program"):
        return f"print({words!r})"
    if name in ("command", "cmd"):
        return f"echo {slug}"
    if name in ("path", "file", "filename", "file_path", "filepath"):
        return f"notes/{slug}.md"
    return None


def plain_answer(cands: Candidates, rng: random.Random) -> str:
    """The text reply to a request with no schema and no tool call: about its topic."""
    topic = cands.topic or "your question"
    # A sentence that adds something: not the one the topic came from.
    details = [s for s in cands.sentences[:6] if topic not in s]
    parts = [f"Here is a short answer about {topic}."]
    if details:
        detail = details[rng.randrange(len(details))]
        parts.append(f"The key point: {fit_length(detail, 0, 240)}")
    return " ".join(parts)


def after_tool_answer(request: str, results: tuple[ToolResult, ...]) -> str:
    """The text that ends a turn once tool results came back: what each one returned."""
    topic = subject(request)
    topic = topic if topic != "the request" else "your request"
    names = list(dict.fromkeys(r.name for r in results if r.name))
    if len(names) == 1:
        source = f"the {names[0]} result"
    elif names:
        source = f"the {', '.join(names[:-1])} and {names[-1]} results"
    else:
        source = "the tool results"
    head = f"Based on {source}, here is what I did about {topic}:"
    return "\n".join([head, *result_lines(results)]) if results else head
