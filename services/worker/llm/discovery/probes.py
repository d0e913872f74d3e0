"""The feature probes: each a tiny request (1–32 tokens) whose answer decides one
capability. A probe that gets no answer, or a transient one (429, 502–504),
decides nothing: the permissive default stays and a note says why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from services.worker.llm.discovery.prober import Prober, ProbeReply
from services.worker.llm.token_estimate import estimate_tokens

HELLO = "Hi"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
}
TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
TOOL_ASK = [{"role": "user", "content": "Call the get_weather tool for the city Paris."}]
# How servers word an overflow: vLLM and llama-cpp-python's server ("maximum context
# length is M"), llama-cpp-python's library ("exceed context window of M"), llama.cpp.
_WINDOW_PATTERNS = (
    re.compile(r"maximum context length is (\d+)"),
    re.compile(r"context window of (\d+)"),
    re.compile(r"context size \((\d+)"),
    re.compile(r"n_ctx(?:_slot)?\s*[=:]\s*(\d+)"),
)


@dataclass
class Findings:
    """What the probes found so far, and notes on what they could not find out."""

    values: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def note(self, what: str, reply: ProbeReply | None = None) -> None:
        self.notes.append(f"{what}: {reply.message()}" if reply is not None else what)


def window_in(message: str) -> int | None:
    """The context window an overflow error names, if it names one."""
    for pattern in _WINDOW_PATTERNS:
        found = pattern.search(message)
        if found:
            return int(found.group(1))
    return None


def baseline(prober: Prober, found: Findings) -> ProbeReply:
    """A one-token reply to "Hi": the reference for every other probe, and the
    template's overhead (prompt tokens reported beyond the text's own)."""
    reply = prober.chat([{"role": "user", "content": HELLO}])
    if not reply.ok:
        found.note("baseline request refused", reply)
        return reply
    usage = reply.body.get("usage") if isinstance(reply.body, dict) else None
    prompt = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    if isinstance(prompt, int):
        text_tokens = found.values.pop("_hello_tokens", None) or estimate_tokens(HELLO)
        found.values["template_overhead_tokens"] = max(0, prompt - text_tokens)
    return reply


def structured_output(prober: Prober, found: Findings) -> None:
    """``json_schema`` if accepted, else ``json_object`` with the schema, else prompt."""
    asks = [{"role": "user", "content": "Answer with JSON: is the sky blue?"}]
    spec = {"name": "probe", "schema": SCHEMA, "strict": True}
    first = prober.chat(asks, response_format={"type": "json_schema", "json_schema": spec})
    if first.ok:
        found.values["structured_output"] = "json_schema"
        return
    if first.transient:
        found.note("structured-output probe got no verdict", first)
        return
    second = prober.chat(asks, response_format={"type": "json_object", "schema": SCHEMA})
    if second.ok:
        found.values["structured_output"] = "json_object"
    elif second.transient:
        found.note("json_object probe got no verdict", second)
    else:
        found.values["structured_output"] = "prompt"


def roles(prober: Prober, found: Findings) -> None:
    """Is a system message accepted; are two user messages in a row accepted."""
    system = prober.chat([{"role": "system", "content": "Be brief."}, _user()])
    if system.ok or system.refused:
        found.values["system_role"] = system.ok
    else:
        found.note("system-role probe got no verdict", system)
    twice = prober.chat([_user(), {"role": "user", "content": "Hello"}])
    if twice.ok or twice.refused:
        found.values["alternation"] = not twice.ok
    else:
        found.note("alternation probe got no verdict", twice)


def tools(prober: Prober, found: Findings, server: str) -> None:
    """Native tool calls (``tool_choice: "auto"``) vs the JSON protocol; whether a
    streamed request may carry tools."""
    whole = prober.chat(TOOL_ASK, tools=[TOOL], tool_choice="auto", max_tokens=32)
    if whole.transient:
        found.note("tool probe got no verdict", whole)
        return
    called = whole.ok and _has_tool_call(whole.body)
    # A server known to parse tool calls may still see a tiny model answer in text.
    native = called or (whole.ok and server in ("vllm", "llama.cpp"))
    found.values["tool_mode"] = "native" if native else "json"
    if not native:
        return
    streamed = prober.chat_stream(TOOL_ASK, tools=[TOOL], tool_choice="auto", max_tokens=32)
    if streamed.status is None:
        found.note(f"streamed tool probe got no verdict: {streamed.error}")
        return
    # An empty 200, an error, or plain text where the whole reply had a call: not streamed.
    good = streamed.status == 200 and not streamed.empty and (streamed.tool_calls or not called)
    found.values["stream_tool_calls"] = good


def tokenize_path(prober: Prober, found: Findings, server: str) -> None:
    """The tokenizer route (vLLM and llama.cpp ``/tokenize``, llama-cpp-python
    ``/extras/tokenize``), and the hello's true token count for the overhead."""
    candidates = {
        "vllm": [("/tokenize", {"model": prober.model, "prompt": HELLO})],
        "llama.cpp": [("/tokenize", {"content": HELLO})],
        "llama-cpp-python": [("/extras/tokenize", {"input": HELLO})],
    }.get(server, [("/tokenize", {"model": prober.model, "prompt": HELLO, "content": HELLO})])
    for path, body in candidates:
        url = f"{prober.root}{path}"
        reply = prober.post(url, body)
        tokens = reply.body.get("tokens") if reply.ok and isinstance(reply.body, dict) else None
        if isinstance(tokens, list):
            found.values["tokenize_path"] = prober.host_path(url)
            found.values["_hello_tokens"] = len(tokens)
            return


def overflow_window(prober: Prober, found: Findings, tokens: int) -> None:
    """llama-cpp-python's window from its overflow error: a prompt of ``tokens``
    one-token words is refused before any evaluation when it does not fit (the
    window is named in the error); when it fits, it is evaluated, so ``tokens``
    is far above any window such a server runs."""
    words = " hi" * tokens
    reply = prober.chat([{"role": "user", "content": words}])
    window = window_in(reply.message()) if not reply.ok else None
    if window is not None:
        found.values["context_tokens"] = window
        found.values["context_source"] = "error_probe"
    else:
        found.note("context probe named no window", reply)


def _user() -> dict[str, str]:
    return {"role": "user", "content": HELLO}


def _has_tool_call(body: Any) -> bool:
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return False
    message = choices[0].get("message") or {}
    return bool(isinstance(message, dict) and message.get("tool_calls"))
