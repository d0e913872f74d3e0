"""The simulator as users start it: ``python -m services.model_sim`` and the click command."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from click.testing import CliRunner

from services.model_sim.command import model_sim
from services.model_sim.server import start_subprocess


def test_subprocess_plays_the_script_file(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": [{"content": "scripted from a file"}]}))
    sim = start_subprocess(script=script)
    try:
        body = {"model": "any", "messages": [{"role": "user", "content": "hi"}]}
        resp = httpx.post(f"{sim.base_url}/chat/completions", json=body, timeout=10)
        assert resp.json()["choices"][0]["message"]["content"] == "scripted from a file"
    finally:
        sim.stop()
    assert sim.process.returncode is not None


def test_bad_script_file_stops_the_command_with_a_reason(tmp_path: Path) -> None:
    script = tmp_path / "bad.json"
    script.write_text('{"replies": [{"error": 418}]}')
    result = CliRunner().invoke(model_sim, ["--script", str(script), "--port", "1"])
    assert result.exit_code != 0
    assert "error must be one of" in result.output


def test_missing_script_file_is_reported(tmp_path: Path) -> None:
    result = CliRunner().invoke(model_sim, ["--script", str(tmp_path / "none.json")])
    assert result.exit_code != 0
    assert "cannot read script" in result.output


def test_script_comes_from_the_environment(tmp_path: Path) -> None:
    script = tmp_path / "env.json"
    script.write_text("[not a script]")
    result = CliRunner().invoke(model_sim, [], env={"LEAFLAB_SIM_SCRIPT": str(script)})
    assert result.exit_code != 0
    assert "env.json" in result.output
