"""Reading SSE streams the way OpenAI-compatible servers write them."""

from __future__ import annotations

import pytest

from services.worker.llm.stream import StreamAssembler, StreamErrorEvent, iter_sse_data


def test_sse_events_comments_and_multiline_data() -> None:
    lines = ["data: one", "", ": keep-alive", "", "data: a", "data: b", "", "data:[DONE]"]
    assert list(iter_sse_data(lines)) == ["one", "a\nb", "[DONE]"]


def test_whole_tool_call_in_one_chunk_and_missing_ids() -> None:
    assembler = StreamAssembler()
    call = {"index": 0, "function": {"name": "glob", "arguments": '{"pattern": "*"}'}}
    assembler.feed({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    assembler.feed({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    response = assembler.response(prompt_chars=30, request_id=None, latency_s=0, requested="m")
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("call_0", "glob", '{"pattern": "*"}')
    ]
    # No usage chunk: estimated, never zero (budgets must see a cost).
    assert response.usage.estimated and response.usage.input_tokens == 10
    assert response.model == "m"


@pytest.mark.parametrize("chunk", [{"error": {"message": "engine died"}}, ["not", "a", "chunk"]])
def test_error_event_or_garbage_chunk_stops_the_stream(chunk: object) -> None:
    with pytest.raises(StreamErrorEvent):
        StreamAssembler().feed(chunk)
