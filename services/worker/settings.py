"""Agent worker settings."""

from __future__ import annotations

import os
import socket
from typing import Literal

from pydantic import Field, model_validator

from services.worker.approvals.protected import DEFAULT_PROTECTED_PATHS
from services.worker.context.settings import ContextSettings
from services.worker.llm.settings import LlmSettings


def default_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class WorkerSettings(ContextSettings, LlmSettings):
    worker_id: str = Field(default_factory=default_worker_id)
    # Durable job runtime: the lease, the time slice, the sweeper.
    lease_ttl_s: float = 30.0
    time_slice_s: float = 20.0
    sweep_interval_s: float = 5.0
    requeue_after_s: float = 30.0
    worker_concurrency: int = 64
    # Fair dispatch: at most this many running jobs per user (batch parents and
    # subagents excluded); the rest wait queued, holding no worker (0: no cap).
    max_running_jobs_per_user: int = 8
    max_consecutive_tool_failures: int = 5
    # Slices are short, so a long survey legitimately takes many attempts.
    max_job_attempts: int = 500
    # A job whose slices keep losing their worker (killed by the OOM killer, a
    # crash, a segfaulting library) with no step finished in between is failed
    # after this many, instead of killing workers every lease TTL for hours.
    max_lost_slices: int = Field(default=5, ge=1)
    # Outages (spine/model_wait.py): a job whose model call found every endpoint
    # down waits as ``waiting_model`` (no worker, no lease) and is failed after this
    # long without progress; the waited-on endpoints are probed (GET /models) at most
    # once per interval, cluster-wide, each probe bounded by the timeout.
    model_outage_max_s: float = Field(default=3600.0, ge=0)
    model_probe_interval_s: float = Field(default=10.0, gt=0)
    model_probe_timeout_s: float = Field(default=5.0, gt=0)
    # A job parked this many times in a row on an HTTP 500/501 from an endpoint whose
    # probe answers is failed: the server is up and this request is what breaks it.
    model_server_error_parks: int = Field(default=5, ge=1)
    tool_retry_attempts: int = 3
    tool_retry_base_s: float = 0.2
    db_pool_size: int = 20
    # Approvals (services/worker/approvals): off | protected (writes to protected
    # paths wait for a human) | strict (also every bash/python call). A project's
    # approval_mode overrides it.
    approval_mode: Literal["off", "protected", "strict"] = "protected"
    approval_protected_suffixes: list[str] = Field(
        default_factory=lambda: [".tex", ".bib", ".sty", ".py", ".m", ".ipynb", ".sh"]
    )
    # Glob patterns (approvals/protected.py; build files, hooks, CI, other languages).
    approval_protected_paths: list[str] = Field(
        default_factory=lambda: list(DEFAULT_PROTECTED_PATHS)
    )
    # A bash/python call in ``protected`` mode: the protected files are copied
    # aside before it runs and changes are held for approval (approvals/exec_hold.py).
    # Past these bounds the call itself waits for approval instead.
    approval_hold_max_files: int = Field(default=2000, ge=1)
    approval_hold_max_mb: float = Field(default=64.0, gt=0)
    approval_scan_max_entries: int = Field(default=100_000, ge=100)
    token_flush_s: float = 0.05
    # Budgets: past this share of any budget a call goes to the fast tier (a
    # budget's own soft_threshold wins). Sandbox and embedding time are unpriced.
    budget_soft_threshold: float = Field(default=0.8, gt=0, le=1)
    system_prompt: str = (
        "You are Leaflab, a careful research assistant for a scientific lab. "
        "Use the tools to read and write files in the session workspace, keep a todo "
        "list for multi-step work, and answer concisely with what you found."
    )

    @model_validator(mode="after")
    def _slice_fits_soft_limit(self) -> WorkerSettings:
        # A slice that outlives the soft limit is killed mid-step.
        if self.time_slice_s >= self.task_soft_time_limit_s:
            raise ValueError("time_slice_s must be < task_soft_time_limit_s")
        return self
