"""Streams bounded by silence, not length, against the simulator over real HTTP: a slow
steady stream is read whole, a stall is a retryable timeout, the total deadline keeps
the partial reply, an empty stream is resent once without streaming."""

from __future__ import annotations

import time
from typing import Any

import pytest

from services.model_sim.server import SimServerHandle
from services.worker.llm.backoff import RetryPolicy
from services.worker.llm.client import ModelClient
from services.worker.llm.deadline import TimeoutPolicy
from services.worker.llm.errors import ModelError
from services.worker.llm.types import RetryNotice
from tests.worker.llm.conftest import ScriptInstaller, sim_stats

USER = [{"role": "user", "content": "Tell me a long story."}]
QUICK = RetryPolicy(max_retries=2, base_delay_s=0.01, max_delay_s=0.05)
WORDS = " ".join(f"w{i}" for i in range(40))


def client_with(sim: SimServerHandle, **timeouts: Any) -> ModelClient:
    return ModelClient(sim.base_url, "k", timeouts=TimeoutPolicy(**timeouts), retry_policy=QUICK)


def requests(sim: SimServerHandle, key: str) -> int:
    return int(sim_stats(sim)["conversations"][key]["requests"])


class TestSlowStreams:
    def test_a_slow_steady_stream_longer_than_the_timeout_succeeds_in_one_request(
        self, sim: SimServerHandle, script: ScriptInstaller
    ) -> None:
        # 40 tokens 40 ms apart: 1.6 s, over three times the 0.5 s first-token timeout
        # that used to bound the whole reply.
        key = script({"replies": [{"content": WORDS, "token_delay_ms": 40}]})
        client = client_with(sim, first_token_s=0.5, idle_s=0.5)
        tokens: list[str] = []
        started = time.monotonic()
        reply = client.complete(
            model="m", messages=USER, max_tokens=256, conversation_key=key, on_token=tokens.append
        )
        assert time.monotonic() - started > 1.5
        assert reply.content == WORDS and reply.finish_reason == "stop"
        assert not reply.truncated and reply.attempts == 1
        assert len(tokens) == 40  # flushed one by one as they were made
        assert requests(sim, key) == 1

    def test_a_stall_is_a_retryable_timeout(
        self, sim: SimServerHandle, script: ScriptInstaller
    ) -> None:
        stall = {"content": WORDS, "stall_after_tokens": 3, "stall_ms": 3000}
        key = script({"replies": [stall]})
        client = client_with(sim, first_token_s=2, idle_s=0.4)
        client.policy = RetryPolicy(max_retries=0)
        with pytest.raises(ModelError) as caught:
            client.complete(model="m", messages=USER, max_tokens=256, conversation_key=key)
        assert caught.value.error_type == "timeout" and caught.value.retryable
        assert "stalled" in caught.value.message

    def test_a_stalled_attempt_is_announced_and_retried(
        self, sim: SimServerHandle, script: ScriptInstaller
    ) -> None:
        stall = {"stall_after_tokens": 3, "stall_ms": 3000}  # the first attempt only
        key = script({"replies": [stall, {"content": "alpha beta gamma delta epsilon"}]})
        client = client_with(sim, first_token_s=2, idle_s=0.4)
        notices: list[RetryNotice] = []
        tokens: list[str] = []
        reply = client.complete(
            model="m",
            messages=USER,
            max_tokens=64,
            conversation_key=key,
            on_token=tokens.append,
            on_retry=notices.append,
        )
        assert reply.content == "alpha beta gamma delta epsilon" and reply.attempts == 2
        assert [(n.attempt, "timeout" in n.error) for n in notices] == [(1, True)]
        assert tokens[:3] == ["alpha", " beta", " gamma"]  # the stalled attempt's text

    def test_the_total_deadline_keeps_the_partial_reply(
        self, sim: SimServerHandle, script: ScriptInstaller
    ) -> None:
        # 40 tokens 50 ms apart take 2 s; the hard cap is 0.8 s.
        key = script({"replies": [{"content": WORDS, "token_delay_ms": 50}]})
        client = client_with(sim, first_token_s=2, idle_s=2, total_s=0.8)
        started = time.monotonic()
        reply = client.complete(model="m", messages=USER, max_tokens=256, conversation_key=key)
        assert time.monotonic() - started < 1.5
        assert reply.finish_reason == "deadline" and reply.truncated
        assert reply.content and WORDS.startswith(reply.content) and reply.content != WORDS
        assert reply.usage.estimated and reply.attempts == 1
        assert requests(sim, key) == 1  # kept, never regenerated

    def test_the_deadline_follows_the_measured_rate(
        self, sim: SimServerHandle, script: ScriptInstaller
    ) -> None:
        # A server that ignores max_tokens: 8 tokens asked, 200 sent 20 ms apart (4 s).
        # Measured after 4 tokens, the rest gets 2 × its time at that rate (or 0.3 s).
        long = " ".join(f"t{i}" for i in range(200))
        key = script({"replies": [{"content": long, "token_delay_ms": 20}]})
        client = client_with(
            sim, first_token_s=2, idle_s=2, total_s=60, measure_after=4, floor_s=0.3
        )
        started = time.monotonic()
        reply = client.complete(model="m", messages=USER, max_tokens=8, conversation_key=key)
        assert time.monotonic() - started < 1.5  # not the 60 s cap, not the 4 s reply
        assert reply.finish_reason == "deadline"
        assert reply.content and 8 <= len(reply.content.split()) < 60

    def test_max_tokens_truncates_when_the_reply_honours_it(
        self, client: ModelClient, script: ScriptInstaller
    ) -> None:
        key = script({"replies": [{"content": WORDS, "honour_max_tokens": True}]})
        reply = client.complete(model="m", messages=USER, max_tokens=5, conversation_key=key)
        assert reply.finish_reason == "length" and reply.truncated
        assert reply.content == WORDS[:15]


class TestEmptyStreams:
    def test_an_empty_stream_is_resent_once_and_its_real_error_raised(
        self, client: ModelClient, script: ScriptInstaller, sim: SimServerHandle
    ) -> None:
        roles = "Conversation roles must alternate user/assistant/user/assistant/..."
        key = script(
            {
                "replies": [
                    {"empty_stream": True},
                    {"error": 500, "message": roles},
                    {"content": "never"},
                ]
            }
        )
        with pytest.raises(ModelError) as caught:
            client.complete(model="m", messages=USER, max_tokens=16, conversation_key=key)
        err = caught.value
        assert (err.error_type, err.status, err.retryable) == ("template", 500, False)
        assert err.message == roles
        assert requests(sim, key) == 2  # the stream, and one resend without streaming

    def test_an_empty_stream_whose_resend_answers_gives_the_answer_once(
        self, client: ModelClient, script: ScriptInstaller, sim: SimServerHandle
    ) -> None:
        key = script({"replies": [{"empty_stream": True}, {"content": "the real answer"}]})
        tokens: list[str] = []
        reply = client.complete(
            model="m", messages=USER, max_tokens=16, conversation_key=key, on_token=tokens.append
        )
        assert reply.content == "the real answer" and reply.extra["resent_without_stream"]
        assert tokens == ["the real answer"]
        assert requests(sim, key) == 2
