"""Which server answers, and the context window it states about itself.

- vLLM: ``/v1/models`` entries are ``owned_by: "vllm"`` and carry ``max_model_len``;
- llama.cpp's own server: ``owned_by: "llamacpp"``, and ``GET /props`` gives
  ``default_generation_settings.n_ctx`` and ``total_slots``;
- llama-cpp-python: ``owned_by: "me"`` with an empty ``permissions`` list and no
  context length anywhere (its overflow error names it: see ``context_probe``);
- Leaflab's simulator: ``owned_by: "leaflab-sim"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from services.worker.llm.discovery.prober import Prober, ProbeReply


@dataclass(frozen=True)
class Identity:
    server: str
    models: tuple[str, ...]
    # The window and where it was read, when the server states it.
    context_tokens: int | None = None
    context_source: str | None = None
    slots: int | None = None


def _entries(reply: ProbeReply) -> list[dict[str, Any]]:
    data = reply.body.get("data") if isinstance(reply.body, dict) else None
    return [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []


def _server_of(entries: list[dict[str, Any]], headers: dict[str, str]) -> str:
    owners = {str(e.get("owned_by", "")) for e in entries}
    if "vllm" in owners or any("max_model_len" in e for e in entries):
        return "vllm"
    if "llamacpp" in owners:
        return "llama.cpp"
    if "leaflab-sim" in owners:
        return "leaflab-sim"
    if "me" in owners and all(e.get("permissions") == [] for e in entries):
        return "llama-cpp-python"
    server_header = headers.get("server", "").lower()
    if "llama" in server_header:
        return "llama.cpp"
    return "unknown"


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _props(prober: Prober) -> tuple[int | None, int | None]:
    """(n_ctx, total_slots) from llama.cpp's ``GET /props``, when it answers."""
    reply = prober.get(f"{prober.root}/props")
    if not reply.ok or not isinstance(reply.body, dict):
        return None, None
    settings = reply.body.get("default_generation_settings")
    n_ctx = _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None
    return n_ctx or _positive(reply.body.get("n_ctx")), _positive(reply.body.get("total_slots"))


def identify(prober: Prober, models_reply: ProbeReply) -> Identity:
    """The server and what it says about the probed model (``models_reply`` is its
    answer to ``GET /v1/models``)."""
    entries = _entries(models_reply)
    server = _server_of(entries, models_reply.headers)
    models = tuple(str(e["id"]) for e in entries if "id" in e)
    mine = next((e for e in entries if e.get("id") == prober.model), entries[0] if entries else {})
    if server == "vllm":
        return Identity(server, models, _positive(mine.get("max_model_len")), "models")
    if server in ("llama.cpp", "unknown"):
        n_ctx, slots = _props(prober)
        if n_ctx is not None or slots is not None:
            return Identity("llama.cpp", models, n_ctx, "props" if n_ctx else None, slots)
    return Identity(server, models)
