"""The job every peer runs: model, tool, model, tool, model.

Model calls go through Leaflab's own ``ModelClient`` to the simulator, so the HTTP
client's cost is the same in every system and what differs is the durability
around each step. A peer's model call carries the conversation key ``PEERS_KEY``,
whose script (one reply, at the set latency) the runner puts on the simulator.
"""

from __future__ import annotations

import hashlib
from typing import Literal

from services.worker.llm.client import ModelClient

PEERS_KEY = "bench-peers"
Step = Literal["model", "tool"]
# 3 model calls and 2 tool calls, in the order an agent makes them.
STEPS: tuple[Step, ...] = ("model", "tool", "model", "tool", "model")
MESSAGES = [{"role": "user", "content": "go"}]


def model_client(sim_url: str) -> ModelClient:
    """One thread-safe client per process, as a worker shares one."""
    return ModelClient(f"{sim_url}/v1", "k", timeout_s=60, max_retries=0)


def model_call(client: ModelClient) -> str:
    reply = client.complete(model="m", messages=MESSAGES, max_tokens=16, conversation_key=PEERS_KEY)
    return reply.content or ""


def tool_call(job: int, index: int) -> str:
    """A trivial local tool: a few microseconds of work and a small result to store."""
    return hashlib.sha256(f"{job}:{index}".encode()).hexdigest()[:16]


def simulator_script(latency_ms: int) -> dict[str, object]:
    """Every peer request has no assistant message, so it plays slot 0 at ``latency_ms``."""
    return {"latency_ms": latency_ms, "replies": [{"content": "ok"}]}
