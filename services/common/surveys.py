"""The stages of a survey and its shape by target length, shared by the worker (which
runs it), the API (which estimates it and shows its progress) and the CLI (which
watches it): one owner for these names and numbers."""

from __future__ import annotations

from dataclasses import dataclass

STAGES = ("plan", "gather", "read", "outline", "write", "verify", "assemble")


@dataclass(frozen=True)
class SurveyShape:
    sections: int
    max_papers: int
    words_per_section: int


SHAPES = {
    "short": SurveyShape(sections=3, max_papers=6, words_per_section=150),
    "medium": SurveyShape(sections=5, max_papers=12, words_per_section=300),
    "long": SurveyShape(sections=8, max_papers=25, words_per_section=500),
}
DEFAULT_LENGTH = "medium"
# Passages the gather stage keeps per paper and their size: what a note's prompt holds.
CHUNKS_PER_PAPER = 6
CHUNK_CHARS = 1500


def shape_for(length: str | None) -> SurveyShape:
    return SHAPES[length or DEFAULT_LENGTH]
