"""Settings of the model-visible context: budget, compression, prompts, skills, memory.

Mixed into ``WorkerSettings`` (env prefix ``LEAFLAB_``); each field is owned here.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from services.common.settings import CommonSettings


class ContextSettings(CommonSettings):
    # context_limit_tokens (CommonSettings): the input budget is it minus the output reserve.
    context_output_reserve_tokens: int = Field(default=4_096, ge=0)
    # Long tool outputs are cut to these sizes (head and tail kept) by the 60 % / 70 % layers.
    context_truncate_primary_chars: int = Field(default=4_000, ge=200)
    context_truncate_all_chars: int = Field(default=2_000, ge=200)
    # Newest user messages kept verbatim beside a rolling summary.
    context_keep_user_tokens: int = Field(default=2_000, ge=0)
    context_summary_max_tokens: int = Field(default=1_024, ge=64)
    # Deployment-wide prompt pieces (a project may add its own under its folder);
    # skills_dir is a common setting: the API lists the skills too.
    prompts_dir: str | None = None
    # Prompt switching: after user turn k the system prompt becomes a named prompt
    # file (``<name>.md`` in a prompts folder) or, failing that, this literal text.
    prompt_switch_after_turn: int | None = Field(default=None, ge=0)
    prompt_switch_to: str | None = None
    # Memory maintenance: a background job after this many turns of a session
    # without a memory write (0 turns it off), capped in model calls and tokens.
    memory_every_turns: int = Field(default=10, ge=0)
    memory_max_steps: int = Field(default=6, ge=1, le=50)
    memory_max_tokens: int = Field(default=20_000, ge=1_000)

    @model_validator(mode="after")
    def _reserve_leaves_room(self) -> ContextSettings:
        if self.context_output_reserve_tokens >= self.context_limit_tokens:
            raise ValueError("context_output_reserve_tokens must be < context_limit_tokens")
        return self

    @property
    def input_budget_tokens(self) -> int:
        return self.context_limit_tokens - self.context_output_reserve_tokens
