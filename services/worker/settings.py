"""Agent worker settings."""

from __future__ import annotations

import os
import socket

from pydantic import Field

from services.worker.llm.settings import LlmSettings


def default_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class WorkerSettings(LlmSettings):
    worker_id: str = Field(default_factory=default_worker_id)
    max_consecutive_tool_failures: int = 5
    # Slices are short, so a long survey legitimately takes many attempts.
    max_job_attempts: int = 500
    tool_retry_attempts: int = 3
    tool_retry_base_s: float = 0.2
    db_pool_size: int = 20
    token_flush_s: float = 0.05
    system_prompt: str = (
        "You are Leaflab, a careful research assistant for a scientific lab. "
        "Use the tools to read and write files in the session workspace, keep a todo "
        "list for multi-step work, and answer concisely with what you found."
    )
