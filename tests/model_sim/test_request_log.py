"""The simulator's request log (``GET /_sim/requests``) and the ``#slot=<n>`` key suffix."""

from __future__ import annotations

import httpx

from services.model_sim.state import RECORDED_CONVERSATIONS, RECORDED_REQUESTS
from tests.model_sim.test_server import USER, chat, put_script

SCRIPT = {"replies": [{"content": "first"}, {"content": "second"}, {"content": "third"}]}


class TestRequestLog:
    def test_what_each_request_sent_is_read_back_in_order(self, http: httpx.Client) -> None:
        chat(http, "log1", USER)
        follow = [*USER, {"role": "assistant", "content": "x"}, {"role": "user", "content": "y"}]
        chat(http, "log1", follow)
        items = http.get("/_sim/requests", params={"key": "log1"}).json()["items"]
        assert [i["messages"] for i in items] == [USER, follow]
        assert [i["slot"] for i in items] == [0, 1]
        assert http.get("/_sim/requests", params={"key": "none"}).json()["items"] == []

    def test_the_log_is_bounded(self, http: httpx.Client) -> None:
        for _ in range(RECORDED_REQUESTS + 5):
            chat(http, "busy", USER)
        items = http.get("/_sim/requests", params={"key": "busy"}).json()["items"]
        assert len(items) == RECORDED_REQUESTS
        for n in range(RECORDED_CONVERSATIONS + 1):
            chat(http, f"many-{n}", USER)
        assert http.get("/_sim/requests", params={"key": "many-0"}).json()["items"] == []


class TestSlotSuffix:
    def test_a_slot_suffix_picks_the_reply_and_keeps_the_conversation(
        self, http: httpx.Client
    ) -> None:
        put_script(http, "comp", SCRIPT)
        # A compressed view with no assistant message left still asks for reply 2.
        resp = chat(http, "comp#slot=2", USER)
        assert resp.json()["choices"][0]["message"]["content"] == "third"
        assert chat(http, "comp", USER).json()["choices"][0]["message"]["content"] == "first"
        items = http.get("/_sim/requests", params={"key": "comp"}).json()["items"]
        assert [i["slot"] for i in items] == [2, 0]
        assert "comp#slot=2" not in http.get("/_sim/stats").json()["conversations"]
