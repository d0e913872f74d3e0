"""What the runtime and the model see of these tools: names, schemas, effects."""

from __future__ import annotations

from services.worker.tools.base import ToolEffect
from services.worker.tools.files import file_tools
from services.worker.tools.registry import ToolRegistry
from services.worker.tools.todo import todo_tool


def test_registry_offers_the_interface_names() -> None:
    registry = ToolRegistry([*file_tools(), todo_tool()])
    assert registry.names() == ["edit_file", "glob", "grep", "read_file", "todo", "write_file"]


def test_every_argument_is_described_for_the_model() -> None:
    for tool in [*file_tools(), todo_tool()]:
        params = tool.openai_schema()["function"]["parameters"]
        assert tool.description
        for name, prop in params["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"


def test_effects_and_retry_safety() -> None:
    effects = {t.name: (t.effect, t.retry_safe) for t in [*file_tools(), todo_tool()]}
    assert effects == {
        "read_file": (ToolEffect.READ_ONLY, True),
        "glob": (ToolEffect.READ_ONLY, True),
        "grep": (ToolEffect.READ_ONLY, True),
        "write_file": (ToolEffect.WORKSPACE_EDIT, False),
        "edit_file": (ToolEffect.WORKSPACE_EDIT, False),
        "todo": (ToolEffect.IDEMPOTENT, True),
    }
