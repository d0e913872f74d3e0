"""Fallback between two real simulator endpoints: which failures move on, which do not."""

from __future__ import annotations

import time

import pytest

from services.worker.llm.errors import ModelError
from services.worker.llm.routing.profiles import Candidate, RoutingConfigError
from services.worker.llm.routing.router import RoutingFailed
from services.worker.llm.settings import LlmSettings
from tests.worker.llm.routing_fixtures import (
    USER,
    Endpoints,
    endpoints,  # noqa: F401 (fixture)
    fresh_key,
    router_for,
    settings_for,
)

MODEL = "route-model"
ANSWER = {"replies": [{"content": "answered by B"}]}
LATER = {"content": "answered later"}


@pytest.mark.parametrize(
    "fault",
    [
        {"error": 429},
        {"error": 503},
        {"error": 500},
        {"delay_ms": 3000},  # longer than the 1 s timeout
        {"disconnect": True},
    ],
    ids=["429", "503", "500", "timeout", "disconnect"],
)
def test_retryable_failure_falls_back_to_the_second_endpoint(
    endpoints: Endpoints,  # noqa: F811
    fault: dict[str, object],
) -> None:
    key = fresh_key()
    endpoints.script(endpoints.a, key, {"replies": [fault, {"content": "answered by A"}]})
    endpoints.script(endpoints.b, key, ANSWER)
    routed = router_for(endpoints, MODEL).complete(
        scene="agent_reasoning", messages=USER, max_tokens=64, conversation_key=key
    )
    assert routed.response.content == "answered by B"
    assert routed.profile == "b" and routed.model == MODEL
    assert [a.candidate for a in routed.attempts] == [
        Candidate("a", MODEL),
        Candidate("b", MODEL),
    ]
    assert routed.attempts[-1].outcome == "ok" and routed.fallback
    assert "fallback #1 b:route-model" in routed.reason
    assert endpoints.requests(endpoints.a, key) == 1
    assert endpoints.requests(endpoints.b, key) == 1


@pytest.mark.parametrize("status", [400, 422])
def test_request_error_does_not_fall_back(
    endpoints: Endpoints,  # noqa: F811
    status: int,
) -> None:
    key = fresh_key()
    endpoints.script(
        endpoints.a,
        key,
        {"replies": [{"error": status, "message": "maximum context length exceeded"}, LATER]},
    )
    endpoints.script(endpoints.b, key, ANSWER)
    with pytest.raises(ModelError) as caught:
        router_for(endpoints, MODEL).complete(
            scene="agent_reasoning", messages=USER, max_tokens=64, conversation_key=key
        )
    assert caught.value.status == status and not caught.value.retryable
    assert caught.value.error_type == "context_overflow"
    assert endpoints.requests(endpoints.b, key) == 0


def test_401_moves_to_the_next_profile_not_the_next_model(
    endpoints: Endpoints,  # noqa: F811
) -> None:
    key = fresh_key()
    endpoints.script(endpoints.a, key, {"replies": [{"error": 401}, {"content": "A"}]})
    endpoints.script(endpoints.b, key, ANSWER)
    router = router_for(
        endpoints,
        MODEL,
        model_routes={"balanced": [f"a:{MODEL}", "a:other-model", f"b:{MODEL}"]},
    )
    routed = router.complete(
        scene="agent_reasoning", messages=USER, max_tokens=64, conversation_key=key
    )
    assert routed.profile == "b"
    assert [a.outcome for a in routed.attempts] == ["auth", "skipped_profile", "ok"]
    assert endpoints.requests(endpoints.a, key) == 1  # other-model on A never asked


def test_all_candidates_failing_retries_after_retry_after(
    endpoints: Endpoints,  # noqa: F811
) -> None:
    key = fresh_key()
    endpoints.script(endpoints.a, key, {"replies": [{"error": 503, "retry_after": 1}, LATER]})
    endpoints.script(endpoints.b, key, {"replies": [{"error": 503}, LATER]})
    router = router_for(endpoints, MODEL, llm_max_retries=1)
    started = time.monotonic()
    routed = router.complete(
        scene="agent_reasoning", messages=USER, max_tokens=64, conversation_key=key
    )
    # The second pass waited for A's Retry-After (1 s), not the 10 ms backoff.
    assert time.monotonic() - started >= 1.0
    assert routed.profile == "a"
    assert [str(a) for a in routed.attempts] == [
        f"a:{MODEL}=server_error 503",
        f"b:{MODEL}=server_error 503",
        f"a:{MODEL}=ok",
    ]


def test_every_candidate_down_raises_with_each_attempt(
    endpoints: Endpoints,  # noqa: F811
) -> None:
    key = fresh_key()
    endpoints.script(endpoints.a, key, {"replies": [{"error": 502}, LATER]})
    endpoints.script(endpoints.b, key, {"replies": [{"error": 429}, LATER]})
    with pytest.raises(RoutingFailed) as caught:
        router_for(endpoints, MODEL).complete(
            scene="agent_reasoning", messages=USER, max_tokens=64, conversation_key=key
        )
    assert [a.outcome for a in caught.value.routed_attempts] == ["server_error", "rate_limit"]
    assert caught.value.retryable and "no candidate of tier 'balanced'" in str(caught.value)


def test_tier_override_and_scenes_pick_the_candidates(
    endpoints: Endpoints,  # noqa: F811
) -> None:
    router = router_for(
        endpoints,
        MODEL,
        model_routes={"fast": ["b:small"], "flagship": [f"a:{MODEL}"]},
        model_scenes={"survey_writing": "flagship"},
    )
    assert router.primary("context_summarize") == Candidate("b", "small")
    assert router.primary("survey_writing") == Candidate("a", MODEL)
    assert router.primary("survey_writing", tier_override="fast") == Candidate("b", "small")
    key = fresh_key()
    endpoints.script(endpoints.b, key, ANSWER)
    routed = router.complete(
        scene="agent_reasoning",
        tier_override="fast",
        messages=USER,
        max_tokens=64,
        conversation_key=key,
    )
    assert (routed.tier, routed.model) == ("fast", "small")
    assert routed.reason.startswith("tier fast (override)")
    with pytest.raises(ValueError, match="unknown tier"):
        router.primary("agent_reasoning", tier_override="huge")


def test_json_tool_protocol_follows_the_profile_flag(
    endpoints: Endpoints,  # noqa: F811
) -> None:
    key = fresh_key()
    reply = '```json\n{"tool": "python", "arguments": {"code": "print(2)"}}\n```'
    endpoints.script(endpoints.a, key, {"replies": [{"content": reply}]})
    settings = settings_for(endpoints, MODEL)
    settings.model_profiles[0].json_tool_protocol = True
    from services.worker.llm.routing.setup import router_from_settings

    tools = [
        {
            "type": "function",
            "function": {"name": "python", "parameters": {"type": "object"}},
        }
    ]
    routed = router_from_settings(settings, redis=None).complete(
        scene="agent_reasoning", messages=USER, tools=tools, max_tokens=64, conversation_key=key
    )
    assert [(c.name, c.arguments) for c in routed.response.tool_calls] == [
        ("python", '{"code": "print(2)"}')
    ]


class TestConfig:
    def test_legacy_settings_are_one_implicit_profile(self) -> None:
        from services.worker.llm.routing.profiles import build_candidates, profiles_from_settings

        settings = LlmSettings(
            llm_base_url="http://127.0.0.1:9/v1", model="mid", model_fast="small"
        )
        profiles = profiles_from_settings(settings)
        assert [(p.name, p.base_url, p.models) for p in profiles] == [
            ("default", "http://127.0.0.1:9/v1", ["mid", "small"])
        ]
        table = build_candidates(settings, profiles)
        assert table["fast"] == [Candidate("default", "small"), Candidate("default", "mid")]
        assert table["balanced"] == [Candidate("default", "mid")]

    def test_profiles_from_the_environment(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv(
            "LEAFLAB_MODEL_PROFILES",
            '[{"name": "gpu1", "base_url": "http://10.0.0.1/v1", "api_key": "k1"},'
            ' {"name": "cloud", "base_url": "https://api.example/v1", "models": ["big"],'
            '  "json_tool_protocol": true}]',
        )
        settings = LlmSettings()
        assert [p.name for p in settings.model_profiles] == ["gpu1", "cloud"]
        assert settings.model_profiles[1].json_tool_protocol

    @pytest.mark.parametrize(
        ("overrides", "message"),
        [
            ({"model_routes": {"huge": ["a:m"]}}, "unknown tiers"),
            ({"model_routes": {"fast": ["nobody-serves-this"]}}, "no profile serves"),
            ({"model_scenes": {"agent_reasoning": "gigantic"}}, "unknown tiers"),
        ],
    )
    def test_bad_routing_config_is_a_clear_error(
        self, overrides: dict[str, object], message: str
    ) -> None:
        from services.worker.llm.routing.setup import router_from_settings

        profiles = [{"name": "a", "base_url": "http://127.0.0.1:9/v1", "models": ["m"]}]
        settings = LlmSettings(model="m", model_profiles=profiles, **overrides)
        with pytest.raises(RoutingConfigError, match=message):
            router_from_settings(settings, redis=None)

    def test_duplicate_profile_names_are_refused(self) -> None:
        from pydantic import ValidationError

        twice = [{"name": "a", "base_url": "http://x/v1"}, {"name": "a", "base_url": "http://y/v1"}]
        with pytest.raises(ValidationError, match="unique"):
            LlmSettings(model_profiles=twice)


def test_the_route_goes_on_the_model_call_span(endpoints: Endpoints) -> None:  # noqa: F811
    from services.worker.llm.routing.trace import routed_span_attributes

    key = fresh_key()
    endpoints.script(endpoints.a, key, {"replies": [{"error": 503}, LATER]})
    endpoints.script(endpoints.b, key, ANSWER)
    routed = router_for(endpoints, MODEL).complete(
        scene="agent_reasoning", messages=USER, max_tokens=64, conversation_key=key
    )
    attrs = routed_span_attributes(routed)
    assert attrs["leaflab.route_reason"] == (
        "scene agent_reasoning -> tier balanced; fallback #1 b:route-model"
    )
    assert attrs["leaflab.fallback"] is True
    assert attrs["leaflab.route.tier"] == "balanced" and attrs["leaflab.route.profile"] == "b"
    assert attrs["leaflab.route.attempts"] == [
        "a:route-model=server_error 503",
        "b:route-model=ok",
    ]
    assert attrs["gen_ai.request.model"] == MODEL


def test_every_profile_refusing_the_key_fails_without_retrying(
    endpoints: Endpoints,  # noqa: F811
) -> None:
    key = fresh_key()
    endpoints.script(endpoints.a, key, {"replies": [{"error": 401}, LATER]})
    endpoints.script(endpoints.b, key, {"replies": [{"error": 403}, LATER]})
    with pytest.raises(RoutingFailed) as caught:
        router_for(endpoints, MODEL, llm_max_retries=2).complete(
            scene="agent_reasoning", messages=USER, max_tokens=64, conversation_key=key
        )
    assert [a.outcome for a in caught.value.routed_attempts] == ["auth", "permission"]
    assert not caught.value.retryable and caught.value.status == 403
    assert endpoints.requests(endpoints.a, key) == 1  # no second pass
