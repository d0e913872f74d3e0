"""Structured output that survives any server: replies read tolerantly, validated, one
repair call that shows the model its reply and the problem, and a reply cut at its
token limit reported as truncated (the calls go to the simulator over real HTTP)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from services.model_sim.server import SimServerHandle, serve_in_thread
from services.worker.llm.client import ModelClient
from services.worker.llm.types import ModelResponse
from services.worker.survey.reply_fit import CHARS_PER_TOKEN
from services.worker.survey.structured import (
    StageFailed,
    answer_with_one_repair,
    parse_json_object,
)

SCHEMA = {
    "type": "object",
    "properties": {"title": {"type": "string"}, "points": {"type": "array"}},
    "required": ["title", "points"],
}
ASK = [
    {"role": "system", "content": "You write outlines."},
    {"role": "user", "content": "An outline, please."},
]
VALID = '{"title": "Models", "points": ["a", "b"]}'


@pytest.fixture(scope="module")
def sim() -> Iterator[SimServerHandle]:
    handle = serve_in_thread(0)
    yield handle
    handle.stop()


class Conversation:
    """One scripted conversation on the simulator and the calls made in it."""

    def __init__(self, sim: SimServerHandle, replies: list[dict[str, Any]]) -> None:
        self.sim = sim
        self.key = f"structured-{uuid.uuid4().hex[:8]}"
        url = f"{sim.url}/_sim/scripts/{self.key}"
        httpx.put(url, json={"replies": replies}, timeout=5).raise_for_status()
        self.client = ModelClient(sim.base_url, "k", timeout_s=5, max_retries=0)
        self.densities: list[float] = []  # the chars per token each call was fitted to
        self.replies: list[str] = []

    def call(self, messages: list[dict[str, Any]], chars_per_token: float) -> ModelResponse:
        self.densities.append(chars_per_token)
        reply = self.client.complete(
            model="m", messages=messages, max_tokens=8, conversation_key=self.key
        )
        self.replies.append(reply.content or "")
        return reply

    def sent(self) -> list[list[dict[str, Any]]]:
        items = httpx.get(
            f"{self.sim.url}/_sim/requests", params={"key": self.key}, timeout=5
        ).json()["items"]
        return [item["messages"] for item in items]


@pytest.mark.parametrize(
    "text",
    [
        VALID,
        f"```json\n{VALID}\n```",
        f"Here is the outline:\n{VALID}\nHope this helps!",
        '{"title": "Line one\nline two\tand a tab", "points": []}',  # raw controls in a string
        "Sure.\n```\n" + VALID + "\n```",
    ],
    ids=["plain", "fence", "text-around", "raw-newline", "bare-fence"],
)
def test_replies_are_read_tolerantly(text: str) -> None:
    data = parse_json_object(text)
    assert isinstance(data["title"], str) and isinstance(data["points"], list)


@pytest.mark.parametrize(
    ("text", "problem"),
    [("", "the reply is empty"), ("[1, 2]", "not a JSON object"), ("{nope", "invalid JSON")],
)
def test_what_is_not_an_object_says_why(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_json_object(text)


def test_a_text_wrapped_reply_needs_no_repair(sim: SimServerHandle) -> None:
    talk = Conversation(sim, [{"content": f"Sure! {VALID} Anything else?"}])
    assert answer_with_one_repair("outline", SCHEMA, ASK, talk.call, max_tokens=8) == {
        "title": "Models",
        "points": ["a", "b"],
    }
    assert len(talk.sent()) == 1


def test_an_invalid_reply_gets_one_repair_showing_it_and_the_problem(
    sim: SimServerHandle,
) -> None:
    talk = Conversation(sim, [{"content": '{"title": "Models"}'}, {"content": VALID}])
    data = answer_with_one_repair("outline", SCHEMA, ASK, talk.call, max_tokens=8)
    assert data["points"] == ["a", "b"]
    first, repair = talk.sent()
    assert first == ASK
    assert repair[-2] == {"role": "assistant", "content": '{"title": "Models"}'}
    assert "'points' is a required property" in repair[-1]["content"]


def test_a_reply_cut_at_max_tokens_is_reported_as_truncated(sim: SimServerHandle) -> None:
    long = '{"title": "' + "word " * 40 + '", "points": []}'
    cut = {"content": long, "honour_max_tokens": True}
    talk = Conversation(sim, [cut, cut])
    with pytest.raises(StageFailed) as caught:
        answer_with_one_repair("outline", SCHEMA, ASK, talk.call, max_tokens=8)
    message = str(caught.value)
    assert "the reply was truncated at 8 tokens" in message
    assert "invalid JSON" not in message
    repair = talk.sent()[1][-1]["content"]
    assert "cut off" in repair and "shorter" in repair
    # Less in the bounds too: fitted under the density the cut reply showed.
    first, second = talk.densities
    assert first == CHARS_PER_TOKEN
    shown = len(talk.replies[0]) / 8
    assert second < min(first, shown)


def test_a_repair_for_a_wrong_shape_keeps_the_bounds(sim: SimServerHandle) -> None:
    talk = Conversation(sim, [{"content": '{"title": "Models"}'}, {"content": VALID}])
    answer_with_one_repair("outline", SCHEMA, ASK, talk.call, max_tokens=8)
    assert talk.densities == [CHARS_PER_TOKEN, CHARS_PER_TOKEN]


def test_invalid_json_twice_fails_with_the_json_error(sim: SimServerHandle) -> None:
    talk = Conversation(sim, [{"content": "Sections: one."}, {"content": "Sorry, no."}])
    with pytest.raises(StageFailed) as caught:
        answer_with_one_repair("outline", SCHEMA, ASK, talk.call, max_tokens=8)
    assert "after one repair (invalid JSON" in str(caught.value)
