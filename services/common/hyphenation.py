"""Words hyphenated at a line end joined back ("effi-" + "cient" → "efficient").

Kept split, "efficient" never matches a keyword search and the embedding reads two
fragments. Real hyphens stay: a hyphen inside a line is never touched, and at a
line end the hyphen is kept when the piece before it is itself a compound
("state-of-the-" + "art"), an acronym or a number ("BERT-" + "base", "GPT-3-"),
or when the next word is a usual compound head ("fine-" + "grained").
Used by the library's parser (``services/library/parsing/layout.py``) and the
one-shot PDF reader (``services/common/pdf_child/child.py``).
"""

from __future__ import annotations

import re

# Second halves that mostly follow a real hyphen in scientific English: a line
# break after "fine-" before "grained" is far likelier "fine-grained" than a word.
COMPOUND_HEADS = frozenset(
    "based level grained specific aware free like scale art wise oriented driven tuned "
    "trained shot end time term domain step order style type source class dimensional "
    "layer head task answer agnostic sensitive friendly world only".split()
)
# "effi-\ncient": a letter, a hyphen, a line break (spaces around it), a lowercase letter.
LINE_BREAK_HYPHEN = re.compile(r"(\S+)-[ \t]*\n[ \t]*([a-z]\w*)")


def keeps_hyphen(before: str, after: str) -> bool:
    """Whether ``before-`` + ``after`` (split at a line end) is a real compound."""
    word = before.rsplit(None, 1)[-1] if before.strip() else ""
    head = re.match(r"[a-z]+", after)
    if not word or not word[-1:].isalpha():
        return True  # "2-" + "dimensional", "(a)-": not a broken word
    if "-" in word or "/" in word:
        return True  # state-of-the- + art
    if any(c.isdigit() for c in word) or sum(c.isupper() for c in word) >= 2:
        return True  # BERT- + base, GPT3- + like
    return head is not None and head.group(0) in COMPOUND_HEADS


def join_broken_word(left: str, right: str) -> str:
    """Join two lines of running text, undoing end-of-line hyphenation."""
    if not left:
        return right
    if left.endswith("-") and left[-2:-1].isalpha() and right[:1].islower():
        if keeps_hyphen(left[:-1], right):
            return left + right
        return left[:-1] + right
    return f"{left} {right}"


def dehyphenate(text: str) -> str:
    """``text`` (lines separated by newlines) with line-end hyphenation undone."""

    def repl(m: re.Match[str]) -> str:
        before, after = m.group(1), m.group(2)
        if keeps_hyphen(before, after):
            return f"{before}-{after}"
        return before + after

    return LINE_BREAK_HYPHEN.sub(repl, text)
