"""The real server itself: it serves the alias, answers chat, and keeps Gemma's rules.

These pin what the other real-model tests rely on: if the launcher stopped registering
Gemma's official template (which refuses non-alternating roles), Leaflab's handling of
that refusal would no longer be tested against anything.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx

from tests.fixtures.real_model import RealModelServer


def _chat(
    server: RealModelServer, messages: list[dict[str, str]], **extra: object
) -> httpx.Response:
    body = {"model": server.model, "messages": messages, "max_tokens": 8, "temperature": 0}
    return httpx.post(f"{server.base_url}/chat/completions", json={**body, **extra}, timeout=60)


def test_serves_the_alias_and_answers_a_chat(real_model: RealModelServer) -> None:
    models = httpx.get(f"{real_model.base_url}/models", timeout=5).json()
    assert [m["id"] for m in models["data"]] == ["gemma-3-270m"]
    reply = _chat(
        real_model, [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    )
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["model"] == "gemma-3-270m"
    assert body["choices"][0]["message"]["role"] == "assistant"
    assert body["usage"]["completion_tokens"] <= 8


def test_gemma_template_refuses_consecutive_same_role_messages(real_model: RealModelServer) -> None:
    reply = _chat(real_model, [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])
    assert reply.status_code == 500
    assert "Conversation roles must alternate" in reply.text


def test_system_message_is_folded_into_the_first_user_turn(real_model: RealModelServer) -> None:
    # The template renders no system turn: the prompt is the user turn with the system
    # text in front, so a system message costs exactly its own tokens and no turn markers.
    with_system = _chat(
        real_model, [{"role": "system", "content": "Zebra."}, {"role": "user", "content": "Hi"}]
    )
    folded = _chat(real_model, [{"role": "user", "content": "Zebra.\n\nHi"}])
    assert with_system.json()["usage"]["prompt_tokens"] == folded.json()["usage"]["prompt_tokens"]


def test_restart_keeps_the_port(real_model_factory: Callable[..., RealModelServer]) -> None:
    server = real_model_factory(n_ctx=1024)
    url = server.base_url
    server.restart()
    assert server.base_url == url
    assert httpx.get(f"{url}/models", timeout=5).status_code == 200
    server.stop()
    try:
        httpx.get(f"{url}/models", timeout=2)
        raise AssertionError("the stopped server still answers")
    except httpx.ConnectError:
        pass
