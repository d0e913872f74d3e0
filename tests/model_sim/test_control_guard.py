"""The simulator's control API behind the stack's internal token (as `leaflab up` runs it):
without it nobody reads other users' requests or scripts their agents; /v1 stays open."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from services.model_sim.server import SimServerHandle, serve_in_thread

TOKEN = "stack-internal-token-for-the-sim-0123456789"
GOOD = {"X-Leaflab-Internal": TOKEN}
CHAT = {"model": "leaflab-sim", "messages": [{"role": "user", "content": "hello"}]}
CONVERSATION = {"X-Leaflab-Conversation": "victim"}
# Every control route, as another local user would try it.
CONTROL = [
    ("GET", "/_sim/stats", None),
    ("GET", "/_sim/requests?key=victim", None),
    ("PUT", "/_sim/scripts/victim", {"replies": [{"content": "INJECTED"}]}),
    ("DELETE", "/_sim/scripts/victim", None),
    ("POST", "/_sim/reset", None),
]


@pytest.fixture(scope="module")
def guarded() -> Iterator[SimServerHandle]:
    handle = serve_in_thread(0, control_token=TOKEN)
    yield handle
    handle.stop()


@pytest.fixture
def http(guarded: SimServerHandle) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=guarded.url, timeout=10) as client:
        yield client


class TestGuardedControlApi:
    @pytest.mark.parametrize(("method", "path", "body"), CONTROL)
    @pytest.mark.parametrize(
        "headers", [{}, {"X-Leaflab-Internal": "wrong"}], ids=["none", "wrong"]
    )
    def test_refused_without_the_token(
        self,
        http: httpx.Client,
        method: str,
        path: str,
        body: object,
        headers: dict[str, str],
    ) -> None:
        refused = http.request(method, path, json=body, headers=headers)
        assert refused.status_code == 401, refused.text
        assert "X-Leaflab-Internal" in refused.json()["error"]["message"]

    def test_a_refused_script_changes_nothing_and_requests_stay_private(
        self, http: httpx.Client
    ) -> None:
        http.post("/_sim/reset", headers=GOOD).raise_for_status()
        script = {"replies": [{"content": "INJECTED"}]}
        assert http.put("/_sim/scripts/victim", json=script).status_code == 401
        answer = http.post("/v1/chat/completions", json=CHAT, headers=CONVERSATION)
        assert answer.status_code == 200
        assert "INJECTED" not in answer.text  # the victim's agent got no scripted reply
        # What the victim's agent sent is readable with the token only.
        assert http.get("/_sim/requests", params={"key": "victim"}).status_code == 401
        seen = http.get("/_sim/requests", params={"key": "victim"}, headers=GOOD)
        assert seen.status_code == 200 and len(seen.json()["items"]) == 1

    def test_works_with_the_token(self, http: httpx.Client) -> None:
        for method, path, body in CONTROL:
            done = http.request(method, path, json=body, headers=GOOD)
            assert done.status_code in (200, 204), (path, done.text)
        script = {"replies": [{"content": "scripted by the stack"}]}
        http.put("/_sim/scripts/own", json=script, headers=GOOD).raise_for_status()
        reply = http.post(
            "/v1/chat/completions", json=CHAT, headers={"X-Leaflab-Conversation": "own"}
        )
        assert reply.json()["choices"][0]["message"]["content"] == "scripted by the stack"
        assert http.get("/_sim/stats", headers=GOOD).json()["requests"] >= 1

    def test_model_routes_and_health_stay_open(self, http: httpx.Client) -> None:
        assert http.get("/healthz").status_code == 200
        assert http.get("/v1/models").status_code == 200
        assert http.post("/v1/chat/completions", json=CHAT).status_code == 200

    def test_slash_spellings_do_not_slip_past(self, guarded: SimServerHandle) -> None:
        for path in ("//_sim/stats", "/_sim/stats/", "/_sim", "/%5Fsim/stats"):
            answer = httpx.get(guarded.url + path, timeout=10)
            assert answer.status_code == 401, (path, answer.status_code)


def test_without_a_token_the_control_api_is_open() -> None:
    # A developer's own simulator (and the test fixtures' ones): unchanged.
    with serve_in_thread(0) as sim:
        assert httpx.get(f"{sim.url}/_sim/stats", timeout=10).status_code == 200
