"""The simulator's slow, stalled, empty and length-cut streams, and that by default a
reply still goes out as one body (other tests rely on it)."""

from __future__ import annotations

import time

import httpx
import pytest

from services.model_sim.script import ScriptError, parse_script

ASK = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}


def stream(http: httpx.Client, key: str, script: dict[str, object]) -> httpx.Response:
    http.put(f"/_sim/scripts/{key}", json=script).raise_for_status()
    headers = {"x-leaflab-conversation": key}
    return http.post("/v1/chat/completions", json={**ASK, "stream": True}, headers=headers)


def test_by_default_a_stream_is_one_body_and_max_tokens_does_not_cut(http: httpx.Client) -> None:
    reply = stream(http, "plain", {"replies": [{"content": "a b c d e f g h i j k l m n"}]})
    assert reply.headers["content-length"]  # one body with a length, not chunked
    assert '"finish_reason": "stop"' in reply.text


def test_a_paced_stream_is_chunked_and_takes_its_time(http: httpx.Client) -> None:
    started = time.monotonic()
    reply = stream(http, "paced", {"replies": [{"content": "a b c d e", "token_delay_ms": 60}]})
    assert time.monotonic() - started >= 0.3
    assert reply.headers.get("transfer-encoding") == "chunked"
    assert reply.text.count('"content"') == 6 and reply.text.endswith("data: [DONE]\n\n")


def test_an_empty_stream_has_no_event(http: httpx.Client) -> None:
    reply = stream(http, "empty", {"replies": [{"empty_stream": True}, {"content": "x"}]})
    assert reply.status_code == 200 and reply.text == ""
    assert reply.headers["content-type"].startswith("text/event-stream")
    assert http.get("/_sim/stats").json()["empty_streams_injected"] == 1


def test_honour_max_tokens_cuts_with_finish_reason_length(http: httpx.Client) -> None:
    script = {"replies": [{"content": "abcdefghijklmnopqrstuvwxyz", "honour_max_tokens": True}]}
    http.put("/_sim/scripts/cut", json=script).raise_for_status()
    reply = http.post(
        "/v1/chat/completions", json=ASK, headers={"x-leaflab-conversation": "cut"}
    ).json()
    choice = reply["choices"][0]
    assert choice["message"]["content"] == "abcdefghijkl" and choice["finish_reason"] == "length"
    assert reply["usage"]["completion_tokens"] == 4


@pytest.mark.parametrize(
    "entry",
    [
        {"stall_after_tokens": 3},
        {"content": "x", "empty_stream": True},
        {"error": 500, "empty_stream": True},
    ],
)
def test_bad_pacing_entries_are_refused(entry: dict[str, object]) -> None:
    with pytest.raises(ScriptError):
        parse_script({"replies": [entry]})
