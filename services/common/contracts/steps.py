"""What an llm step of the ledger stores (``job_steps.result`` / ``.error``) and what a
turn's final answer stores (``jobs.result``), as types.

TypedDicts, not models: at run time each is the plain dict its writer always built,
so the JSON stored stays the same byte for byte and the hot path does no extra work,
while mypy checks every writer and reader against the one declaration here: renaming
a key in this file fails at each site that still spells the old one. Readers of the
ledger get them through one accessor each (``services/worker/spine/ledger.py``) and
read with ``.get`` where a row written before a key existed may lack it.

A tool step's ``result`` and ``error`` are typed as far as every tool shares them
(:class:`ToolStepResult`, :class:`ToolStepError`); the ``data`` and ``details`` inside
are each tool's own shape. Out of scope: the other step kinds (summaries, survey
stages, batch tasks).
"""

# No ``from __future__ import annotations``: with string annotations ``NotRequired`` is
# not seen at run time and ``__required_keys__`` would list every key.
from typing import Any, NotRequired, TypedDict


class ToolCallRecord(TypedDict):
    """One tool call the model asked for, in an llm step's ``tool_calls`` and on the
    assistant message (``messages.tool_calls``).

    Written by ``reply_step_result`` (worker/spine/answer.py) and by memory maintenance
    (worker/memory/maintenance.py); read back by the turn's planner, which runs the calls
    not yet done (``ToolCallSpec(**call)``, worker/runtime/turn.py), by maintenance's
    replay, and from the message by the model-facing history (worker/spine/conversation.py).
    """

    id: str
    name: str
    arguments: str  # the raw JSON text the model produced (may be invalid)


class TokenCounts(TypedDict):
    """Tokens of one model call as an llm step records them: the whole ``usage`` of a
    memory maintenance step (written and read by worker/memory/maintenance.py, which
    caps the job's tokens by their sum) and the part of :class:`LlmUsage` every llm
    step has."""

    input_tokens: int
    output_tokens: int


class LlmUsage(TokenCounts):
    """A turn llm step's ``usage``: the counts as the server reported them, or a local
    count marked ``estimated`` when it reported none.

    Written by ``reply_step_result`` (worker/spine/answer.py); read by the turn when it
    records the step (the job's usage, worker/runtime/turn.py), and shown as stored by
    the API's ``GET /v1/jobs/{id}/steps`` (``StepOut.result``).
    """

    cached_tokens: int
    estimated: bool


class _LlmReply(TypedDict):
    """What every llm step's result holds: the reply's text and its tool calls."""

    content: str | None
    tool_calls: list[ToolCallRecord]


class LlmStepResult(_LlmReply):
    """A turn's succeeded llm step's ``result``: the reply, its usage, what was charged
    and whether the output was weak (cut or empty).

    Written by ``reply_step_result`` (worker/spine/answer.py), recorded by the turn
    (``_record_reply``, worker/runtime/turn.py) and kept in its in-memory ledger;
    read back through ``llm_step_result`` (worker/spine/ledger.py) by the turn's planner
    on every later step and on resume (which calls to run, or the answer), and shown as
    stored by the API's ``GET /v1/jobs/{id}/steps``.
    """

    usage: LlmUsage
    model: str
    finish_reason: str | None
    truncated: bool  # finish_reason is "length" or "deadline"
    empty: bool  # no text and no tool call
    request_id: str | None
    cost_usd: str  # the Decimal charged, as text


class MemoryLlmStepResult(_LlmReply):
    """A memory maintenance job's succeeded llm step's ``result`` (a smaller record than a
    turn's). Written and read back only by worker/memory/maintenance.py (its replay, its
    token cap)."""

    usage: TokenCounts


class LlmStepError(TypedDict):
    """What every failed llm step's ``error`` holds. Written as a :class:`ModelCallError`
    or a :class:`ContextOverflowError` by a turn, and as just these two keys by memory
    maintenance (worker/memory/maintenance.py, which reads ``message`` back for the
    job's error); read through ``llm_step_error`` (worker/spine/ledger.py) by the turn's
    planner, whose job error is ``message`` (``error_text``, worker/spine/ledger_rules.py).
    """

    code: str
    message: str


class ModelCallError(LlmStepError):
    """The ``error`` of a turn's llm step whose model call failed (``code`` is
    ``model_error``; an outage is waited out and records nothing).

    Written by ``model_call_error`` (worker/spine/answer.py) and recorded by
    ``record_failed_llm`` (worker/spine/recorder.py); read as :class:`LlmStepError`
    (above) and shown as stored by the API's ``GET /v1/jobs/{id}/steps``.
    """

    provider: str
    status: int | None  # the HTTP status, None without an answer
    request_id: str | None
    retryable: bool


class ContextOverflowError(LlmStepError):
    """The ``error`` of a turn's llm step refused before the call because the view did not
    fit the window (``code`` is ``context_overflow``). Written by ``record_overflow``
    (worker/context/overflow.py); read as :class:`LlmStepError`."""

    retryable: bool


class AnswerResult(TypedDict):
    """A turn's ``jobs.result`` when it succeeds: the final answer, and a ``notice`` when
    the reply was empty or cut (weak output is said, never silent).

    Written by ``answer_result`` (worker/spine/answer.py) and, on resume after the reply
    was recorded, by the turn's planner from the step (content only,
    worker/runtime/turn.py); read by whoever shows the job: the API (``JobOut.result``),
    ``leaflab watch`` and the ``final`` event.
    """

    content: str
    empty: NotRequired[bool]  # True, with notice, when the reply was empty
    truncated: NotRequired[bool]  # True, with notice, when the reply was cut
    notice: NotRequired[str]


class ToolStepResult(TypedDict):
    """A succeeded tool step's ``result``: what the model read and the tool's own data.

    Written by the tool runner (``ToolStepRunner._complete``, worker/runtime/tool_exec.py)
    from the tool's ``ToolResult``; the model reads ``content`` from the tool message, so
    the ledger's copy is read back by memory maintenance's replay
    (worker/memory/maintenance.py) and shown as stored by the API's
    ``GET /v1/jobs/{id}/steps`` (the job page, ``leaflab watch``).
    """

    content: str
    data: Any  # the tool's own structured result (each tool's shape)


class ToolStepError(TypedDict):
    """A failed or interrupted tool step's ``error``: the ``ToolError`` as
    ``ToolError.to_dict`` (worker/tools/base.py) writes it.

    Read through ``tool_step_error`` (worker/spine/ledger.py) by the consecutive-failure
    rule (worker/spine/tool_failures.py), which names ``code`` and ``message`` in the
    job's error, and shown as stored by the API's ``GET /v1/jobs/{id}/steps``.
    """

    code: str
    category: str
    message: str
    retryable: bool
    details: dict[str, Any]  # the tool's own context (each tool's shape)
