"""``agent(task, tools?)``: a subagent, run as a child job of the calling job.

The child is a turn job with its own session (its own context, starting from
``task`` alone), the same user, project and rules, and the parent's workspace
(so the same files and sandbox). It cannot start subagents of its own. The
runtime (``runtime/child_jobs.py``) spawns it exactly once and suspends the
parent, holding no worker thread, until the child's finish wakes it; the
child's final answer becomes this call's result.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from services.worker.tools.base import Tool, ToolContext, ToolEffect, ToolError, ToolResult

NAME = "agent"
MAX_TASK_CHARS = 20_000


class AgentArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task: str = Field(
        min_length=1,
        max_length=MAX_TASK_CHARS,
        description="A focused, self-contained task; the subagent sees nothing else of "
        "this conversation, so include every fact it needs.",
    )
    tools: list[str] | None = Field(
        default=None,
        max_length=50,
        description="Tool names the subagent may use (default: all but agent).",
    )


class AgentTool(Tool[AgentArgs]):
    name: ClassVar[str] = NAME
    description: ClassVar[str] = (
        "Delegate a focused task to a subagent with a fresh context and the same workspace. "
        "Returns the subagent's final answer. Use it for self-contained sub-problems "
        "(read and summarise files, run an analysis) to keep this conversation short."
    )
    args_model = AgentArgs
    effect: ClassVar[ToolEffect] = ToolEffect.CHILD_JOB

    def child_input(self, args: AgentArgs, ctx: ToolContext, offered: list[str]) -> dict[str, Any]:
        """The child turn's ``job.input``; refuses tools that do not exist or may not nest."""
        allowed = [n for n in offered if n != NAME]
        tools = allowed if args.tools is None else args.tools
        unknown = sorted(set(tools) - set(allowed))
        if unknown:
            raise ToolError(
                "invalid_arguments",
                f"a subagent cannot use {', '.join(unknown)}; choose from {', '.join(allowed)}",
                category="validation",
                details={"unknown": unknown},
            )
        return {
            "content": args.task,
            "tools": sorted(set(tools)),
            # the parent's workspace: same files, same sandbox
            "workspace_session_id": ctx.workspace_session_id or ctx.session_id,
            "subagent_of": {"job_id": ctx.job_id, "tool_call_id": ctx.tool_call_id},
        }

    def run(self, args: AgentArgs, ctx: ToolContext) -> ToolResult:
        raise ToolError(
            "internal", "agent runs as a child job through the runtime", category="internal"
        )


def subagent_tool() -> Tool[Any]:
    return AgentTool()
