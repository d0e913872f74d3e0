"""The model simulator's HTTP app: an OpenAI-compatible server playing scripted replies,
or, for a conversation without a script, auto-mode replies made from the request.

Latency is ``asyncio.sleep``, so hundreds of concurrent requests each wait
their latency at the same time, as against a real batched GPU server.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, replace
from typing import Any, Literal

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services.model_sim import openai_format as fmt
from services.model_sim import quirks as quirk_mode
from services.model_sim.auto import AutoError, auto_reply
from services.model_sim.control_guard import ControlGuard
from services.model_sim.script import Script, ScriptEntry, ScriptError, parse_script
from services.model_sim.state import (
    Decision,
    SimState,
    estimate_tokens,
    message_text,
    split_slot,
)

CONVERSATION_HEADER = "x-leaflab-conversation"
DEFAULT_MODEL = "leaflab-sim"


@dataclass(frozen=True)
class SimConfig:
    default_script: Script | None = None
    latency_ms: int = 0
    model: str = DEFAULT_MODEL
    quirks: quirk_mode.Quirks = quirk_mode.Quirks()
    # Set when the simulator serves a stack: /_sim/* then needs it (see control_guard).
    control_token: str | None = None


class SimHTTPError(Exception):
    """An error answered in OpenAI's ``{"error": {...}}`` format."""

    def __init__(self, status: int, message: str | None = None, retry_after: float | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.retry_after = retry_after


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[dict[str, Any]] | None = None


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")

    include_usage: bool = False


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1)
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    tools: list[dict[str, Any]] | None = None
    max_tokens: int | None = Field(default=None, ge=1)


class RequestIdMiddleware:
    """Adds an ``x-request-id`` header to every response (as OpenAI and vLLM do)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = f"req-sim-{uuid.uuid4().hex[:16]}".encode()

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (b"x-request-id", request_id)]
            await send(message)

        await self.app(scope, receive, send_with_id)


class DisconnectResponse(Response):
    """Sends headers and part of the body, then ends without completing the response,
    so the server drops the connection mid-body (an injected disconnect)."""

    def __init__(self, partial: str, *, media_type: str, declared_length: int | None) -> None:
        super().__init__(content=partial, media_type=media_type)
        self._partial = partial.encode()
        self._declared_length = declared_length

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = [(b"content-type", (self.media_type or "text/plain").encode())]
        if self._declared_length is not None:
            headers.append((b"content-length", str(self._declared_length).encode()))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": self._partial, "more_body": True})


def conversation_key(request: Request, messages: list[dict[str, Any]]) -> str:
    """The header if sent, else a hash of the first user message (stable across turns)."""
    header = request.headers.get(CONVERSATION_HEADER)
    if header:
        return header
    first = next((m for m in messages if m.get("role") == "user"), messages[0])
    return "h-" + hashlib.sha256(message_text(first).encode()).hexdigest()[:16]


async def _json_body(request: Request) -> Any:
    raw = await request.body()
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SimHTTPError(400, f"request body is not valid JSON: {exc}") from exc


def _validation_message(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or '(body)'}: {err['msg']}" for err in exc.errors()
    )


def create_app(config: SimConfig | None = None) -> FastAPI:
    """Build the simulator app; its state lives on ``app.state.sim``."""
    config = config or SimConfig()
    app = FastAPI(title="Leaflab model simulator", docs_url=None, redoc_url=None)
    state = SimState(default_script=config.default_script, default_latency_ms=config.latency_ms)
    app.state.sim = state
    _install_error_handlers(app)
    _install_control_routes(app, state, config)

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Response:
        body = await _json_body(request)
        if isinstance(body, dict) and config.quirks.active:
            refused = quirk_mode.refusal(config.quirks, body)
            if refused is not None:
                return refused
            body = quirk_mode.adjust(config.quirks, body)
        try:
            chat = ChatRequest.model_validate(body)
        except ValidationError as exc:
            state.counters.bad_requests += 1
            raise SimHTTPError(400, _validation_message(exc)) from exc
        messages: list[dict[str, Any]] = body["messages"]
        key, slot_hint = split_slot(conversation_key(request, messages))
        slot = slot_hint if slot_hint is not None else _assistant_count(messages)
        state.record_request(
            key, slot=slot, messages=messages, response_format=body.get("response_format")
        )
        decision = state.decide(key, slot)
        if decision.auto:
            try:
                decision = replace(decision, entry=auto_reply(body))
            except AutoError as exc:
                state.counters.bad_requests += 1
                raise SimHTTPError(400, str(exc)) from exc
        tool_names = [str(t.get("function", {}).get("name")) for t in chat.tools or []]
        state.note_request(key, tools=tool_names, messages=len(messages))
        cached = state.cached_tokens(key, messages, remember=decision.kind != "error")
        state.counters.in_flight += 1
        state.counters.max_in_flight = max(state.counters.max_in_flight, state.counters.in_flight)
        try:
            await asyncio.sleep(decision.latency_s)
        finally:
            state.counters.in_flight -= 1
        if decision.kind == "error" and decision.fault is not None:
            fault = decision.fault
            raise SimHTTPError(fault.error or 500, fault.message, fault.retry_after)
        prompt_chars = sum(len(message_text(m)) for m in messages)
        if config.quirks.active:  # the imitated template's markers count too
            prompt_chars = 3 * quirk_mode.prompt_tokens(messages)
        return _answer(chat, decision, config, prompt_chars, cached)

    if config.control_token:
        app.add_middleware(ControlGuard, token=config.control_token)
    app.add_middleware(RequestIdMiddleware)
    return app


def _assistant_count(messages: list[dict[str, Any]]) -> int:
    return sum(1 for m in messages if m.get("role") == "assistant")


def _answer(
    chat: ChatRequest, decision: Decision, config: SimConfig, prompt_chars: int, cached: int
) -> Response:
    reply = decision.entry
    cut = fmt.cut_at_max_tokens(reply, chat.max_tokens) if reply.honour_max_tokens else None
    completion = fmt.Completion(
        id=f"chatcmpl-sim-{uuid.uuid4().hex[:24]}",
        model=chat.model or config.model,
        created=fmt.now(),
        slot=decision.slot,
        entry=cut or reply,
        prompt_tokens=max(1, estimate_tokens(prompt_chars)),
        completion_tokens=estimate_tokens(len((cut or reply).reply_text())),
        cached_tokens=cached,
        finish="length" if cut is not None else None,
    )
    if decision.kind == "disconnect":
        if chat.stream:
            return DisconnectResponse(
                fmt.partial_stream(completion), media_type="text/event-stream", declared_length=None
            )
        whole = json.dumps(fmt.completion_body(completion))
        return DisconnectResponse(
            whole[: len(whole) // 2], media_type="application/json", declared_length=len(whole)
        )
    if decision.kind == "empty_stream":
        # llama-cpp-python's answer to an error inside a stream: 200, no event at all.
        if chat.stream:
            return StreamingResponse(_no_events(), media_type="text/event-stream")
        return Response(b"", media_type="application/json")
    if not chat.stream:
        return JSONResponse(fmt.completion_body(completion))
    include_usage = bool(chat.stream_options and chat.stream_options.include_usage)
    pacing = decision.fault if decision.fault is not None and decision.fault.paced else reply
    if pacing.paced:
        parts = fmt.stream_parts(completion, include_usage=include_usage)
        return StreamingResponse(
            _paced(parts, pacing),
            media_type="text/event-stream",
            headers={"cache-control": "no-cache"},
        )
    # All events are known once the latency has passed, so they go out as one body with a
    # length: SDKs stop reading at [DONE] and would drop a chunked connection whose final
    # empty chunk is still unread, paying a new TCP connect on every streamed call.
    body = "".join(fmt.stream_events(completion, include_usage=include_usage))
    return Response(body, media_type="text/event-stream", headers={"cache-control": "no-cache"})


async def _no_events() -> AsyncIterator[bytes]:
    return
    yield b""  # an async generator that produces nothing


async def _paced(parts: Iterator[tuple[bool, str]], pacing: ScriptEntry) -> AsyncIterator[str]:
    """The stream's events as a slow model produces them: each token after
    ``token_delay_ms``, a silence of ``stall_ms`` after ``stall_after_tokens`` tokens;
    every event is flushed as it is made (a chunked body)."""
    delay = (pacing.token_delay_ms or 0) / 1000
    tokens = 0
    for is_token, event in parts:
        if is_token:
            if tokens == pacing.stall_after_tokens and pacing.stall_ms is not None:
                await asyncio.sleep(pacing.stall_ms / 1000)
            if delay:
                await asyncio.sleep(delay)
            tokens += 1
        yield event


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(SimHTTPError)
    async def sim_error(_: Request, exc: SimHTTPError) -> JSONResponse:
        headers = {}
        if exc.retry_after is not None:
            headers["retry-after"] = f"{exc.retry_after:g}"
        return JSONResponse(fmt.error_body(exc.status, exc.message), exc.status, headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(fmt.error_body(400, str(exc.errors())), 400)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse(fmt.error_body(exc.status_code, str(exc.detail)), exc.status_code)


def _install_control_routes(app: FastAPI, state: SimState, config: SimConfig) -> None:
    @app.get("/healthz")
    async def healthz() -> dict[str, Any]:
        return {"status": "ok", "model": config.model, "scripts": len(state.scripts)}

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        model = quirk_mode.model_entry(config.quirks, config.model)
        return {"object": "list", "data": [model]}

    quirk_mode.install_routes(app, config.quirks)

    @app.put("/_sim/scripts/{key}")
    async def put_script(key: str, request: Request) -> dict[str, Any]:
        try:
            script = parse_script(await _json_body(request), source=f"script for {key!r}")
        except ScriptError as exc:
            raise SimHTTPError(400, str(exc)) from exc
        state.set_script(key, script)
        return {"key": key, "replies": len(script.replies)}

    @app.delete("/_sim/scripts/{key}", status_code=204)
    async def delete_script(key: str) -> Response:
        if not state.delete_script(key):
            raise SimHTTPError(404, f"no script for conversation {key!r}")
        return Response(status_code=204)

    @app.get("/_sim/requests")
    async def requests(key: str) -> dict[str, Any]:
        return {"key": key, "items": list(state.recorded.get(key, ()))}

    @app.get("/_sim/stats")
    async def stats() -> dict[str, Any]:
        return state.stats()

    @app.post("/_sim/reset")
    async def reset() -> dict[str, str]:
        state.reset()
        return {"status": "reset"}
