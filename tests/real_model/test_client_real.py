"""The model client against a server Leaflab did not write: llama-cpp-python 0.3.x
serving Gemma 3 270M with Gemma's template (alternating roles, no tool rendering, an
empty 200 for any error inside a stream, json_object but not json_schema).

The Capabilities are written by hand here, as discovery would find them. The model
is tiny: the tests judge protocol (accepted requests, valid shapes, classified
errors, no retries), not what it says.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from services.worker.llm.capabilities import Capabilities
from services.worker.llm.client import ModelClient
from services.worker.llm.errors import ModelError
from services.worker.survey.schemas import response_format
from services.worker.survey.structured import parse_json_object
from tests.fixtures.real_model import RealModelServer

LLAMA_CPP = Capabilities(
    context_tokens=8192,
    context_source="props",
    structured_output="json_object",  # json_schema is answered with HTTP 500
    tool_mode="json",  # Gemma's template does not render tools: answers are text
    stream_tool_calls=False,
    system_role=True,  # the template folds it into the first user turn itself
    alternation=True,  # "Conversation roles must alternate user/assistant/..."
    max_concurrency=1,
    server="llama-cpp-python",
    models=("gemma-3-270m",),
)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


def client_for(server: RealModelServer, caps: Capabilities | None = LLAMA_CPP) -> ModelClient:
    return ModelClient(
        server.base_url,
        "sk-local",
        timeout_s=120,
        idle_timeout_s=60,
        max_retries=2,  # a request error must still be sent once
        capabilities=(lambda: caps) if caps is not None else None,
    )


def complete(client: ModelClient, server: RealModelServer, **kwargs: Any) -> Any:
    kwargs.setdefault("max_tokens", 12)
    return client.complete(model=server.model, **kwargs)


def test_a_plain_reply_streams_token_by_token(real_model: RealModelServer) -> None:
    client = client_for(real_model)
    tokens: list[str] = []
    reply = complete(
        client,
        real_model,
        messages=[{"role": "user", "content": "Say hello to the reader."}],
        on_token=tokens.append,
    )
    assert len(tokens) > 1 and "".join(tokens) == reply.content
    assert reply.finish_reason in ("stop", "length") and reply.attempts == 1
    assert reply.truncated is (reply.finish_reason == "length")
    assert reply.usage.estimated  # this server reports no usage in a stream


def test_a_tool_exchange_goes_through_the_json_protocol(real_model: RealModelServer) -> None:
    # Tool calls, two tool results and a system prompt: every role rule of Gemma's
    # template would be broken if they were sent as they are.
    history = [
        {"role": "system", "content": "You answer questions about the weather."},
        {"role": "user", "content": "Weather in Paris and in Rome?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "Sunny, 21 C"},
        {"role": "tool", "tool_call_id": "c2", "content": "Rain, 14 C"},
    ]
    reply = complete(client_for(real_model), real_model, messages=history, tools=TOOLS)
    assert reply.attempts == 1 and not reply.empty
    for call in reply.tool_calls:  # if the model asked for a tool, it is a well-formed call
        assert call.name and parse_json_object(call.arguments) is not None


def test_native_tools_go_unstreamed_with_tool_choice(real_model: RealModelServer) -> None:
    native = Capabilities(**{**LLAMA_CPP.to_dict(), "tool_mode": "native", "models": ()})
    tokens: list[str] = []
    reply = complete(
        client_for(real_model, native),
        real_model,
        messages=[{"role": "user", "content": "What is the weather in Paris?"}],
        tools=TOOLS,
        on_token=tokens.append,
    )
    # Streamed, this server would answer an empty body; unstreamed it answers.
    assert reply.attempts == 1 and "resent_without_stream" not in reply.extra
    assert reply.content is not None and tokens == [reply.content]
    assert usage_reported(reply)


def usage_reported(reply: Any) -> bool:
    return not reply.usage.estimated and reply.usage.input_tokens > 0


def test_structured_output_in_json_object_form(real_model: RealModelServer) -> None:
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
        "required": ["answer"],
    }
    reply = complete(
        client_for(real_model),
        real_model,
        messages=[{"role": "user", "content": "Is Paris in France? Answer in JSON."}],
        response_format=response_format("yes_no", schema),  # json_schema, as surveys send
        max_tokens=24,
    )
    assert reply.attempts == 1
    assert parse_json_object(reply.content or "")["answer"] in ("yes", "no")


def test_same_role_messages_are_merged_and_answered(real_model: RealModelServer) -> None:
    after_summary = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Summary so far: we talked about Paris."},
        {"role": "user", "content": "Name one museum there."},
    ]
    reply = complete(client_for(real_model), real_model, messages=after_summary)
    assert reply.attempts == 1 and reply.content
    # Sent as they are, the template refuses them: a classified error, sent once.
    with pytest.raises(ModelError) as caught:
        complete(client_for(real_model, None), real_model, messages=after_summary)
    assert caught.value.error_type == "template" and not caught.value.retryable
    assert caught.value.attempts == 1 and "roles must alternate" in caught.value.message


def test_an_overflow_is_classified_and_not_retried(real_model: RealModelServer) -> None:
    too_long = [{"role": "user", "content": "word " * (real_model.n_ctx + 500)}]
    started = time.monotonic()
    with pytest.raises(ModelError) as caught:
        # Streamed: an empty 200 body; the one unstreamed resend says why.
        complete(client_for(real_model), real_model, messages=too_long)
    err = caught.value
    assert (err.error_type, err.retryable, err.attempts) == ("context_overflow", False, 1)
    assert f"maximum context length is {real_model.n_ctx} tokens" in err.message
    assert time.monotonic() - started < 60  # refused before any evaluation, no backoff
