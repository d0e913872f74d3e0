"""A long scripted session that walks through every compression layer.

Budget ≈ 5,000 tokens of messages: a 10,500-token window less 1,000 kept for the
reply and ≈ 4,500 of tool schemas (counted: the server evaluates them too).
Each round reads a 30-line file
(~1,000 tokens); rounds from the third on also carry ~400 tokens of assistant
text that no tool layer can shorten, so the view keeps growing until the
rolling summary (90 %) takes over, twice.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import httpx

CONTEXT_ENV = {
    "LEAFLAB_CONTEXT_LIMIT_TOKENS": "10500",
    "LEAFLAB_CONTEXT_OUTPUT_RESERVE_TOKENS": "1000",
    "LEAFLAB_CONTEXT_TRUNCATE_PRIMARY_CHARS": "1500",
    "LEAFLAB_CONTEXT_TRUNCATE_ALL_CHARS": "800",
    "LEAFLAB_CONTEXT_KEEP_USER_TOKENS": "200",
}
PLAN = "aabcdefghijab"  # the same file twice in a row: a duplicate for the 50 % layer
THINKING = "Thinking about the next step. " * 40
FINAL = "All files read."
SUMMARIES = [f"SUMMARY-{n}: some files were read." for n in range(1, 6)]
ALL_LAYERS = {"dedupe", "truncate_primary", "truncate_all", "placeholders", "summary"}


def file_text(name: str) -> str:
    return "".join(f"{name}-line {i} " + "x" * 80 + "\n" for i in range(1, 31))


def write_files(workspace: Path) -> None:
    workspace.mkdir(parents=True, exist_ok=True)
    for name in set(PLAN):
        (workspace / f"{name}.txt").write_text(file_text(name))


def main_script(latency_ms: int = 10) -> dict[str, Any]:
    replies: list[dict[str, Any]] = []
    for r, name in enumerate(PLAN):
        reply: dict[str, Any] = {
            "tool_calls": [{"name": "read_file", "arguments": {"path": f"{name}.txt"}}]
        }
        if r >= 2:
            reply["content"] = THINKING
        replies.append(reply)
    replies.append({"content": FINAL})
    return {"latency_ms": latency_ms, "replies": replies}


def summary_script() -> dict[str, Any]:
    return {"replies": [{"content": text} for text in SUMMARIES]}


def install(sim_url: str, session_id: str) -> None:
    base = sim_url.removesuffix("/v1")
    for key, script in ((session_id, main_script()), (f"{session_id}:summary", summary_script())):
        httpx.put(f"{base}/_sim/scripts/{key}", json=script, timeout=5).raise_for_status()


def received(sim_url: str, key: str) -> list[list[dict[str, Any]]]:
    """The message lists the simulator received for one conversation, in order."""
    base = sim_url.removesuffix("/v1")
    resp = httpx.get(f"{base}/_sim/requests", params={"key": key}, timeout=5)
    resp.raise_for_status()
    return [item["messages"] for item in resp.json()["items"]]


def received_at(sim_url: str, key: str) -> list[float]:
    """When the simulator received each request of one conversation (unix time)."""
    base = sim_url.removesuffix("/v1")
    resp = httpx.get(f"{base}/_sim/requests", params={"key": key}, timeout=5)
    resp.raise_for_status()
    return [float(item["received_at"]) for item in resp.json()["items"]]


def digest(messages: list[dict[str, Any]]) -> str:
    raw = json.dumps(messages, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(raw.encode()).hexdigest()
