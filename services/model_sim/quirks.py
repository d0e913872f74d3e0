"""Quirk modes: the simulator answering like a server Leaflab did not write.

``--quirks llama-cpp-python`` (``LEAFLAB_SIM_QUIRKS``) reproduces llama-cpp-python's
server (0.3.x) with Gemma's chat template, as measured against the real one:

- ``response_format.type == "json_schema"`` is refused with HTTP 500 (it takes
  ``text`` and ``json_object`` with a ``schema``);
- the template raises "Conversation roles must alternate user/assistant/..." (HTTP
  500) unless, after a leading system message (folded into the first user turn),
  the roles go user, assistant, user, …: two same-role messages in a row, or a
  ``tool`` result after an assistant turn, fail;
- ``tools`` are ignored unless ``tool_choice`` is sent; a streamed request with
  tools and a tool choice gets HTTP 200 with an empty body;
- every error inside a stream is HTTP 200 with an empty body (the server ends
  the event stream without a word);
- ``/v1/models`` says nothing about the context window; a prompt of ``n_ctx``
  tokens or more is refused (HTTP 400, "This model's maximum context length is M
  tokens. However, you requested N tokens ...", the server's rewording of
  "Requested tokens (N) exceed context window of M");
- streams carry no ``usage``; ``POST /extras/tokenize`` counts tokens.

``--quirks vllm`` is vLLM's surface: ``max_model_len`` in ``/v1/models``, ``POST
/tokenize``, the same overflow wording; everything else permissive.
``--quirks llama.cpp`` is llama.cpp's own server: ``owned_by: "llamacpp"``, ``GET
/props`` with ``default_generation_settings.n_ctx`` and ``total_slots``, ``POST
/tokenize`` (``{"content"}``); everything else permissive.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse

from services.model_sim import openai_format as fmt
from services.model_sim.state import estimate_tokens, message_text

QuirkName = Literal["none", "llama-cpp-python", "vllm", "llama.cpp"]
QUIRK_NAMES: tuple[str, ...] = ("none", "llama-cpp-python", "vllm", "llama.cpp")
# llama.cpp's own server (``llama-server -np 4``): its slots, reported by /props.
LLAMA_CPP_SLOTS = 4
DEFAULT_N_CTX = 8192
ALTERNATE = "Conversation roles must alternate user/assistant/user/assistant/..."
# Gemma's template turns a tiny user message into ~10 tokens of turn markers.
TEMPLATE_OVERHEAD_TOKENS = 9


@dataclass(frozen=True)
class Quirks:
    name: QuirkName = "none"
    n_ctx: int = DEFAULT_N_CTX

    @property
    def active(self) -> bool:
        return self.name != "none"


def prompt_tokens(messages: list[dict[str, Any]]) -> int:
    """What the quirky server counts for a prompt: the text plus its template's markers."""
    text = sum(len(message_text(m)) for m in messages)
    return estimate_tokens(text) + TEMPLATE_OVERHEAD_TOKENS


def adjust(quirks: Quirks, body: dict[str, Any]) -> dict[str, Any]:
    """The request as the quirky server reads it (tools dropped, no stream usage)."""
    if quirks.name != "llama-cpp-python":
        return body
    body = dict(body)
    if body.get("tools") and body.get("tool_choice") in (None, "none"):
        body.pop("tools")
    body.pop("stream_options", None)
    return body


def refusal(quirks: Quirks, body: dict[str, Any]) -> Response | None:
    """The server's answer when it refuses this request, or None when it serves it."""
    if not quirks.active or not isinstance(body.get("messages"), list):
        return None
    llama = quirks.name == "llama-cpp-python"
    response_format = body.get("response_format")
    if llama and isinstance(response_format, dict) and response_format.get("type") == "json_schema":
        # Refused by the request's validation, before any stream starts.
        message = "response_format: type 'json_schema' is not supported (text, json_object)"
        return JSONResponse(fmt.error_body(500, message), 500)
    found = _llama_refusal(body) if llama else None
    if found is None:
        found = _overflow(quirks, body)
    if found is None:
        return None
    if body.get("stream") and llama:
        # Errors inside llama-cpp-python's event stream end it before the first event.
        return Response(b"", status_code=200, media_type="text/event-stream")
    status, message = found
    return JSONResponse(fmt.error_body(status, message), status)


def _llama_refusal(body: dict[str, Any]) -> tuple[int, str] | None:
    if not _alternates(body["messages"]):
        return 500, ALTERNATE
    if body.get("stream") and body.get("tools") and body.get("tool_choice") not in (None, "none"):
        return 500, "Automatic streaming tool choice is not supported"
    return None


def _alternates(messages: list[Any]) -> bool:
    """Gemma's rule: after a leading system message, user at even places, else not."""
    roles = [m.get("role") if isinstance(m, dict) else None for m in messages]
    if roles and roles[0] == "system":
        roles = roles[1:]
    return all((role == "user") == (i % 2 == 0) for i, role in enumerate(roles))


def _overflow(quirks: Quirks, body: dict[str, Any]) -> tuple[int, str] | None:
    tokens = prompt_tokens(body["messages"])
    if tokens < quirks.n_ctx:
        return None
    completion = body.get("max_tokens") or 0
    return 400, (
        f"This model's maximum context length is {quirks.n_ctx} tokens. However, you "
        f"requested {tokens + completion} tokens ({tokens} in the messages, "
        f"{completion} in the completion). Please reduce the length of the messages or "
        "completion."
    )


def model_entry(quirks: Quirks, model: str) -> dict[str, Any]:
    """One ``/v1/models`` entry as the imitated server writes it."""
    if quirks.name == "llama-cpp-python":
        return {"id": model, "object": "model", "owned_by": "me", "permissions": []}
    if quirks.name == "vllm":
        return {
            "id": model,
            "object": "model",
            "created": 0,
            "owned_by": "vllm",
            "root": model,
            "max_model_len": quirks.n_ctx,
        }
    if quirks.name == "llama.cpp":
        return {"id": model, "object": "model", "created": 0, "owned_by": "llamacpp"}
    return {"id": model, "object": "model", "created": 0, "owned_by": "leaflab-sim"}


def install_routes(app: FastAPI, quirks: Quirks) -> None:
    """The imitated server's tokenizer route (token ids are made up; counts are ours)."""
    if quirks.name == "llama-cpp-python":

        @app.post("/extras/tokenize")
        async def extras_tokenize(request: Request) -> dict[str, Any]:
            text = str((await request.json()).get("input", ""))
            return {"tokens": list(range(estimate_tokens(len(text))))}

    elif quirks.name == "llama.cpp":

        @app.get("/props")
        async def props() -> dict[str, Any]:
            settings = {"n_ctx": quirks.n_ctx, "n_predict": -1}
            return {"default_generation_settings": settings, "total_slots": LLAMA_CPP_SLOTS}

        @app.post("/tokenize")
        async def llama_tokenize(request: Request) -> dict[str, Any]:
            text = str((await request.json()).get("content", ""))
            return {"tokens": list(range(estimate_tokens(len(text))))}

    elif quirks.name == "vllm":

        @app.post("/tokenize")
        async def tokenize(request: Request) -> dict[str, Any]:
            body = await request.json()
            if isinstance(body.get("messages"), list):
                count = prompt_tokens(body["messages"])
            else:
                count = estimate_tokens(len(str(body.get("prompt", ""))))
            return {"count": count, "max_model_len": quirks.n_ctx, "tokens": list(range(count))}
