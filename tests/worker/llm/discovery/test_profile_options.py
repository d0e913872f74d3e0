"""Every profile option is reachable from the plain LEAFLAB_LLM_* variables."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from services.worker.llm.routing.profiles import IMPLICIT_PROFILE, profiles_from_settings
from services.worker.llm.settings import EndpointOptions, LlmSettings, ProfileConfig

PLAIN = {
    "LEAFLAB_LLM_TOOL_PROTOCOL": ("tool_protocol", "json", "json"),
    "LEAFLAB_LLM_STRUCTURED_OUTPUT": ("structured_output", "json_object", "json_object"),
    "LEAFLAB_LLM_CONTEXT_TOKENS": ("context_tokens", "8192", 8192),
    "LEAFLAB_LLM_MAX_CONCURRENCY": ("max_concurrency", "1", 1),
    "LEAFLAB_LLM_SYSTEM_ROLE": ("system_role", "false", False),
    "LEAFLAB_LLM_ALTERNATION": ("alternation", "true", True),
    "LEAFLAB_LLM_STREAM_TOOL_CALLS": ("stream_tool_calls", "false", False),
    "LEAFLAB_LLM_DISCOVER": ("discover", "false", False),
    "LEAFLAB_LLM_TIMEOUT_S": ("timeout_s", "300", 300.0),
}


def test_every_option_has_a_plain_variable() -> None:
    options = set(EndpointOptions.model_fields) | {"timeout_s"}
    assert options == {field for field, _, _ in PLAIN.values()}


@pytest.mark.parametrize("env", sorted(PLAIN))
def test_a_plain_variable_sets_the_implicit_profile(
    env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    field, raw, expected = PLAIN[env]
    monkeypatch.setenv(env, raw)
    (profile,) = profiles_from_settings(LlmSettings())
    assert profile.name == IMPLICIT_PROFILE
    assert getattr(profile, field) == expected


def test_unset_means_discovered(monkeypatch: pytest.MonkeyPatch) -> None:
    for env in PLAIN:
        monkeypatch.delenv(env, raising=False)
    (profile,) = profiles_from_settings(LlmSettings())
    assert profile.tool_protocol == profile.structured_output == profile.alternation == "auto"
    assert profile.context_tokens is None and profile.max_concurrency is None


def test_bad_values_are_refused_with_the_field_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEAFLAB_LLM_TOOL_PROTOCOL", "xml")
    with pytest.raises(ValidationError, match="llm_tool_protocol"):
        LlmSettings()
    with pytest.raises(ValidationError, match="structured_output"):
        ProfileConfig(name="p", base_url="http://127.0.0.1:1/v1", structured_output="yaml")


def test_profiles_json_carries_the_options(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "LEAFLAB_MODEL_PROFILES",
        '[{"name": "cpu", "base_url": "http://127.0.0.1:8101/v1", "max_concurrency": 1,'
        ' "alternation": true, "tool_protocol": "native"}]',
    )
    (profile,) = profiles_from_settings(LlmSettings())
    assert (profile.max_concurrency, profile.alternation, profile.tool_protocol) == (
        1,
        True,
        "native",
    )
