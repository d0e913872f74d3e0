"""The system prompts Leaflab really sends, and a check that a reply quotes none of them."""

from __future__ import annotations

import re
from pathlib import Path

from services.worker.llm.json_protocol import INSTRUCTIONS
from services.worker.prompts.assembly import DEFAULTS, FILE_PIECES
from services.worker.settings import WorkerSettings
from services.worker.survey import outline, plan, read, verify, write

SURVEY_SYSTEMS = (plan.SYSTEM, outline.SYSTEM, read.SYSTEM, write.SYSTEM, verify.SYSTEM)


def agent_system_prompt() -> str:
    """The persona and the default pieces, as the worker assembles them."""
    pieces = [(DEFAULTS / f"{name}.md").read_text(encoding="utf-8") for name in FILE_PIECES]
    return "\n\n".join([WorkerSettings().system_prompt, *pieces])


def sentences(text: str) -> list[str]:
    """The prompt's sentences and list lines, long enough to be telling."""
    parts = re.split(r"(?<=[.!?:;])\s+|\n+", text)
    cleaned = (" ".join(p.split()).strip(" -*#>`.:;") for p in parts)
    return [p for p in cleaned if len(p.split()) >= 4]


def _windows(text: str, size: int) -> set[str]:
    words = re.findall(r"[a-z0-9']+", text.lower())
    return {" ".join(words[i : i + size]) for i in range(len(words) - size + 1)}


def leaks(output: str, prompt: str, *, allowed: str = "") -> list[str]:
    """Sentences of ``prompt`` in ``output``, and 5-word runs of it that ``allowed``
    (what the user or the tools said) does not also contain."""
    flat = " ".join(output.split()).lower()
    found = [s for s in sentences(prompt) if s.lower() in flat]
    runs = (_windows(output, 5) & _windows(prompt, 5)) - _windows(allowed, 5)
    return found + sorted(runs)


ALL_PROMPTS = "\n".join([agent_system_prompt(), INSTRUCTIONS, *SURVEY_SYSTEMS])
__all__ = ["ALL_PROMPTS", "Path", "agent_system_prompt", "leaks", "sentences"]
