"""Which tools a request implies, in what order, and which one to call next.

A request that asks for a todo list, a search, a plot, code to run or a notes
file gets those tools called (only the ones the request offers), one per round,
in a fixed order: plan first (todo), then gather (search), then compute (python),
then write the file that can report what came before. Once every implied tool
was called since the latest request, the plan is done and the turn answers: a
plan is a finite list, so auto mode never loops.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from services.model_sim.auto.sources import Sources

# Kinds of work, in the order they are done, with the words that ask for them.
_IMPLIED: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("todo", re.compile(r"\bto-?\s?do\b|\bchecklist\b|\btask list\b", re.I)),
    (
        "search",
        re.compile(r"\bsearch\w*|\bpapers?\b|\bliterature\b|\blibrary\b|\blook up\b", re.I),
    ),
    ("plot", re.compile(r"\bplot\w*|\bcharts?\b|\bgraphs?\b|\bhistograms?\b|\bvisuali[sz]", re.I)),
    (
        "code",
        re.compile(
            r"\b(?:run|execute|compute|calculate)\b[^.?!]*\b(?:code|script|program)\b", re.I
        ),
    ),
    ("file", re.compile(r"\bnotes?\b|\bfiles?\b|\bsave\b|\b[\w\-/]+\.(?:md|txt|csv|json)\b", re.I)),
)
# The tools that do each kind of work, best first.
_TOOLS_FOR = {
    "todo": ("todo",),
    "search": ("library_search", "paper_search"),
    "plot": ("python",),
    "code": ("python", "bash"),
    "file": ("write_file",),
}


@dataclass(frozen=True)
class PlannedCall:
    name: str
    kind: str  # todo, search, plot, code, file, or "named" (asked for by name)


def _named(names: list[str], text: str) -> list[str]:
    """Offered tools the text asks for by name: "use X", "call X", "run X", "`X`"."""
    found = []
    for name in names:
        quoted = re.escape(name)
        asked = rf"\b(?:use|call|run|using|with)\s+(?:the\s+)?`?{quoted}`?(?![\w])|`{quoted}`"
        if re.search(asked, text, re.IGNORECASE):
            found.append(name)
    return found


def plan(request: str, offered: list[str]) -> list[PlannedCall]:
    """The calls ``request`` implies among the ``offered`` tool names, in order."""
    calls: list[PlannedCall] = []
    for kind, words in _IMPLIED:
        if not words.search(request):
            continue
        tool = next((t for t in _TOOLS_FOR[kind] if t in offered), None)
        if tool is not None and all(c.name != tool for c in calls):
            calls.append(PlannedCall(tool, kind))
    for name in _named(offered, request):
        if all(c.name != name for c in calls):
            calls.append(PlannedCall(name, "named"))
    return calls


def next_call(sources: Sources, offered: list[str]) -> PlannedCall | None:
    """The first planned call not yet made since the latest request; None: answer."""
    for call in plan(sources.request, offered):
        if call.name not in sources.called:
            return call
    return None
