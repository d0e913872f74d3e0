"""The compose GPU profile's vLLM runs with the flags Leaflab's features need, the same
ones bench/gpu/vllm_checks.py starts vLLM with (one list of flags, two places)."""

from __future__ import annotations

import argparse
import json

from bench.gpu.vllm_checks import parse_args, version_tuple, vllm_command
from tests.deploy.test_compose import _config

# What each feature needs from vLLM (see docker-compose.yml's comment on the service).
NEEDED = {
    "--enable-auto-tool-choice": "tool_choice 'auto' with native tool calls",
    "--tool-call-parser": "the model family's tool-call format",
    "--max-model-len": "the window Leaflab reads back from /v1/models",
    "--structured-outputs-config": "response_format json_schema (the survey)",
}


def _flags(command: list[str]) -> dict[str, str | None]:
    """``--name=value`` and ``--name value`` alike, as {name: value or None}."""
    out: dict[str, str | None] = {}
    for i, word in enumerate(command):
        if not word.startswith("--"):
            continue
        name, eq, value = word.partition("=")
        nxt = command[i + 1] if i + 1 < len(command) else ""
        out[name] = value if eq else (nxt if nxt and not nxt.startswith("--") else None)
    return out


def _vllm() -> dict:
    return dict(_config("gpu")["services"]["vllm"])


def _script_command(version: str) -> list[str]:
    args: argparse.Namespace = parse_args(["--model", "Qwen/Qwen2.5-7B-Instruct", "--dry-run"])
    return vllm_command(args, version)


def test_gpu_profile_vllm_has_every_flag_the_features_need() -> None:
    flags = _flags(_vllm()["command"])
    missing = {flag: why for flag, why in NEEDED.items() if flag not in flags}
    assert not missing
    assert flags["--tool-call-parser"] == "hermes"  # Qwen2.5's format
    assert int(flags["--max-model-len"] or 0) == 32768
    assert json.loads(flags["--structured-outputs-config"] or "") == {"backend": "xgrammar"}


def test_the_image_is_new_enough_for_the_structured_outputs_flag() -> None:
    """--structured-outputs-config exists from vLLM 0.10.2 (--guided-decoding-* before)."""
    image = _vllm()["image"]
    name, _, tag = image.partition(":")
    assert name == "vllm/vllm-openai"  # the official image
    assert version_tuple(tag.lstrip("v")) >= (0, 10, 2), image


def test_compose_and_the_gpu_script_start_vllm_with_the_same_flags() -> None:
    version = _vllm()["image"].partition(":")[2].lstrip("v")
    compose, script = _flags(_vllm()["command"]), _flags(_script_command(version))
    for flag in NEEDED:
        assert compose[flag] == script[flag], flag
    # Only where each runs differs: compose binds every interface and serves by flag.
    assert set(script) - set(compose) == set()
    assert set(compose) - set(script) == {"--model"}


def test_the_gpu_script_speaks_the_older_flag_to_an_older_vllm() -> None:
    old = _flags(_script_command("0.8.5"))
    assert "--structured-outputs-config" not in old
    assert old["--guided-decoding-backend"] == "xgrammar"
