"""What the model and the runtime see of the research tools: names, schemas,
effects, retry safety and time limits, as the worker registers them."""

from __future__ import annotations

from services.worker.tools.base import ToolEffect
from services.worker.tools.web.settings import ResearchToolSettings
from services.worker.toolset import build_registry

RESEARCH = ["paper_search", "paper_validate", "pdf_fetch", "web_fetch", "web_search"]


def test_the_worker_offers_the_research_tools_by_their_interface_names() -> None:
    names = build_registry(research=ResearchToolSettings()).names()
    assert set(RESEARCH) <= set(names)
    assert {"read_file", "todo", "python", "library_search"} <= set(names)


def test_every_research_argument_is_described_for_the_model() -> None:
    registry = build_registry(research=ResearchToolSettings())
    for name in RESEARCH:
        tool = registry.get(name)
        params = tool.openai_schema()["function"]["parameters"]
        assert tool.description
        for arg, prop in params["properties"].items():
            assert prop.get("description"), f"{name}.{arg} has no description"


def test_effects_retry_safety_and_time_limits() -> None:
    registry = build_registry(research=ResearchToolSettings())
    declared = {
        n: (registry.get(n).effect, registry.get(n).retry_safe, registry.get(n).timeout_s)
        for n in RESEARCH
    }
    assert declared == {
        "web_search": (ToolEffect.READ_ONLY, True, 60.0),
        "web_fetch": (ToolEffect.READ_ONLY, True, 60.0),
        # Adding to the library is keyed by content: a rerun adds nothing twice.
        "pdf_fetch": (ToolEffect.IDEMPOTENT, True, 120.0),
        "paper_search": (ToolEffect.READ_ONLY, True, 60.0),
        "paper_validate": (ToolEffect.READ_ONLY, True, 60.0),
    }
    # Tools whose abandoned run could still change the workspace never get a limit.
    for name in ("write_file", "edit_file"):
        assert registry.get(name).timeout_s is None
