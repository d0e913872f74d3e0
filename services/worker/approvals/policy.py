"""Which tool calls need a human's approval.

Modes (``LEAFLAB_APPROVAL_MODE``, overridden per project by ``projects.approval_mode``):

- ``off``: nothing waits.
- ``protected`` (default): ``write_file`` / ``edit_file`` on a protected path
  (``protected.py``: the suffixes in ``LEAFLAB_APPROVAL_PROTECTED_SUFFIXES``,
  .tex .bib .sty .py .m .ipynb .sh, and the globs in
  ``LEAFLAB_APPROVAL_PROTECTED_PATHS``: Makefile, pyproject.toml, .github/** …)
  wait, with the file's diff. A ``bash`` / ``python`` call runs, and what it did
  to protected paths is put back and held for approval (``exec_hold.py``).
- ``strict``: as ``protected``, and every ``bash`` / ``python`` call waits too.
  Whether a command changes the workspace cannot be decided reliably from its
  text (``python -c``, redirections, scripts that write), so the rule is the
  conservative one: every sandbox call counts as workspace-changing.

Whatever the mode, a tool that declares ``approval_required`` (the tools of an
MCP server registered with ``approval: true``) waits for every call, shown as
a ``command``: the tool and its arguments. The admin marked that server, so a
project's mode does not lift it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from services.worker.approvals.protected import ProtectedPaths
from services.worker.tools.base import Tool, ToolEffect

MODES = ("off", "protected", "strict")


@dataclass(frozen=True)
class Proposal:
    """What a human is asked to approve."""

    kind: str  # "file_write" | "command" | "exec_changes"
    diffs: list[dict[str, Any]]
    baselines: dict[str, str | None]


def proposal_for(
    *,
    mode: str,
    protected: ProtectedPaths,
    tool: Tool,
    arguments: dict[str, Any],
    intent: dict[str, Any] | None,
) -> Proposal | None:
    """The approval this call needs under ``mode``, or None when it may run at once."""
    if tool.approval_required:
        shown = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
        return Proposal(
            kind="command",
            diffs=[{"tool": tool.name, "command": f"{tool.name} {shown}"[:20_000]}],
            baselines={},
        )
    if mode == "off":
        return None
    if tool.effect is ToolEffect.WORKSPACE_EDIT and intent is not None:
        path = str(intent.get("path", ""))
        if not protected.match(path):
            return None
        return Proposal(
            kind="file_write",
            diffs=[{"path": path, "tool": tool.name, "diff": intent.get("diff", "")}],
            baselines={path: intent.get("previous_sha256")},
        )
    if tool.effect is ToolEffect.SANDBOX and mode == "strict":
        command = arguments.get("command") or arguments.get("code") or ""
        return Proposal(
            kind="command",
            diffs=[{"tool": tool.name, "command": str(command)[:20_000]}],
            baselines={},
        )
    return None
