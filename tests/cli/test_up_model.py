"""`leaflab up` and the model: which one it points at, that it asks it before "ready",
and what the ready banner says about it.

The rules of :func:`choose_model` and the banner's wording are checked directly (they are
pure); two real stacks check the whole thing: ``--local-model`` serves the real llama.cpp
server supervised and a job is answered by it, and an endpoint that does not answer is a
loud warning while the stack still starts.
"""

from __future__ import annotations

import re
from typing import Any

import click
import httpx
import pytest

from services.cli.up.model_endpoint import (
    EndpointProbe,
    ModelChoice,
    choose_model,
    model_block_lines,
)
from tests.cli.up_harness import kill_group, new_home, remove, start_up, stop
from tests.fixtures.processes import free_port
from tests.fixtures.real_model import require_real_model


def _choose(environ: dict[str, str] | None = None, **flags: Any) -> ModelChoice:
    args: dict[str, object] = {
        "model_sim": None,
        "local_model": False,
        "model_url": None,
        "model": None,
        "local_alias": "gemma-3-270m",
    }
    args.update(flags)
    return choose_model(environ=environ or {}, **args)  # type: ignore[arg-type]


class TestChooseModel:
    def test_flags_then_environment_then_the_simulator(self) -> None:
        assert _choose().kind == "simulator"
        assert _choose().model == "leaflab-sim"
        url = _choose(model_url="http://127.0.0.1:9/v1/", model="m")
        assert (url.kind, url.base_url, url.model) == ("endpoint", "http://127.0.0.1:9/v1", "m")
        env = {"LEAFLAB_LLM_BASE_URL": "http://127.0.0.1:9/v1", "LEAFLAB_MODEL": "qwen"}
        from_env = _choose(env)
        assert (from_env.kind, from_env.model) == ("endpoint", "qwen")
        # An explicit simulator wins over a configured URL (make up used to do this silently;
        # now only the flag does it).
        assert _choose(env, model_sim="-").kind == "simulator"
        local = _choose(local_model=True)
        assert (local.kind, local.model) == ("local", "gemma-3-270m")
        # Routing profiles are an endpoint too: no simulator starts to shadow them.
        profiles = '[{"name": "gpu", "base_url": "http://127.0.0.1:7/v1", "models": ["q"]}]'
        routed = _choose({"LEAFLAB_MODEL_PROFILES": profiles})
        assert (routed.kind, routed.base_url, routed.model) == (
            "endpoint",
            "http://127.0.0.1:7/v1",
            "q",
        )
        assert routed.env() == {"LEAFLAB_MODEL_SIMULATED": "false"}

    def test_every_variable_the_services_get_names_the_choice(self) -> None:
        sim = _choose().at(8100).env()
        assert sim == {
            "LEAFLAB_LLM_BASE_URL": "http://127.0.0.1:8100/v1",
            "LEAFLAB_MODEL": "leaflab-sim",
            "LEAFLAB_MODEL_SIMULATED": "true",
        }
        real = _choose(model_url="http://127.0.0.1:9/v1", model="m").env()
        assert real["LEAFLAB_MODEL_SIMULATED"] == "false"

    @pytest.mark.parametrize(
        ("flags", "message"),
        [
            ({"model_sim": "-", "model_url": "http://x/v1"}, "choose one model source"),
            ({"local_model": True, "model_url": "http://x/v1"}, "choose one model source"),
            ({"model": "m"}, "--model needs --model-url"),
            ({"model_url": "http://x/v1"}, "add --model NAME"),
            ({"local_model": True, "model": "other"}, "drop --model"),
        ],
    )
    def test_contradictions_are_usage_errors(self, flags: dict[str, Any], message: str) -> None:
        with pytest.raises(click.UsageError, match=re.escape(message)):
            _choose(**flags)


class TestModelBlock:
    def test_the_simulator_is_labelled_and_says_how_to_connect_a_real_model(self) -> None:
        lines = model_block_lines(_choose().at(8100), EndpointProbe(True, ["leaflab-sim"]))
        assert lines[0].startswith("model: leaflab-sim at http://127.0.0.1:8100/v1")
        assert "SIMULATOR" in lines[0] and "simulated" in lines[0]
        assert "--model-url" in lines[1] and "--local-model" in lines[1]
        assert not any("WARNING" in line for line in lines)

    def test_unreachable_endpoint_and_unknown_model_are_warnings(self) -> None:
        choice = _choose(model_url="http://127.0.0.1:9/v1", model="m")
        down = model_block_lines(choice, EndpointProbe(False, error="ConnectError"))
        assert any(
            line.startswith("WARNING: the model endpoint http://127.0.0.1:9/v1 does not answer")
            for line in down
        )
        other = model_block_lines(choice, EndpointProbe(True, ["a", "b"]))
        assert any("serves a, b, not 'm'" in line for line in other)
        fine = model_block_lines(choice, EndpointProbe(True, ["m"]))
        assert fine == ["model: m at http://127.0.0.1:9/v1  [your endpoint]"]


def _model_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.startswith("model: ")]
    assert lines, text
    return lines[-1]


class TestUpWithModels:
    def test_local_model_is_served_supervised_and_answers_a_job(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        require_real_model()
        # The small model rarely ends its turn by itself: a short reply keeps this quick.
        monkeypatch.setenv("LEAFLAB_LLM_MAX_TOKENS", "32")
        home, api_port = new_home(), free_port()
        stack = start_up(home, api_port, model_args=["--local-model"])
        try:
            text = stack.text()
            line = _model_line(text)
            match = re.match(r"model: gemma-3-270m at (http://127\.0\.0\.1:(\d+)/v1)", line)
            assert match, line
            assert "local llama.cpp server" in line and "SIMULATOR" not in text
            assert text.index("model: ") < text.index("Leaflab is ready")
            assert "WARNING" not in text
            url, port = match.group(1), int(match.group(2))
            assert stack.record()["ports"]["local-model"] == port
            assert "local-model" in stack.record()["children"]
            served = httpx.get(f"{url}/models", timeout=10).json()["data"]
            assert [m["id"] for m in served] == ["gemma-3-270m"]
            # The workers call it: a submitted job is answered by the real server.
            submitted = stack.cli("submit", "Say hi.", "--watch", timeout=120)
            assert submitted.returncode == 0, submitted.stdout + submitted.stderr
            assert "[succeeded]" in submitted.stdout
            log = (home / "logs" / "local-model.log").read_text(errors="replace")
            assert "POST /v1/chat/completions" in log
        finally:
            stop(stack)
            kill_group(stack)
            remove(home)

    def test_unreachable_endpoint_is_a_loud_warning_and_the_stack_still_starts(self) -> None:
        dead = f"http://127.0.0.1:{free_port()}/v1"
        home, api_port = new_home(), free_port()
        stack = start_up(home, api_port, model_args=["--model-url", dead, "--model", "gpt-x"])
        try:
            text = stack.text()
            assert _model_line(text) == f"model: gpt-x at {dead}  [your endpoint]"
            assert f"WARNING: the model endpoint {dead} does not answer" in text
            assert "SIMULATOR" not in text
            assert "model-sim" not in stack.record()["ports"]
            assert httpx.get(f"{stack.url}/healthz", timeout=10).status_code == 200
        finally:
            stop(stack)
            kill_group(stack)
            remove(home)
