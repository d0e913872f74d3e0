"""bench/gpu/vllm_checks.py without a GPU: its dry run prints the vLLM command the
features need, and a command it cannot build is refused with the reason."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from services.model_sim.server import start_subprocess
from tests.bench.runner import ROOT

SCRIPT = "bench.gpu.vllm_checks"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - our own script
        [sys.executable, "-m", SCRIPT, *args],
        cwd=ROOT, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip


def test_dry_run_prints_the_vllm_command_with_the_features_flags() -> None:
    done = _run("--model", "Qwen/Qwen2.5-7B-Instruct", "--dry-run", "--vllm-version", "0.11.0",
                "--max-model-len", "16384", "--", "--tensor-parallel-size", "2")  # fmt: skip
    assert done.returncode == 0, done.stderr
    header, line = done.stdout.strip().splitlines()
    assert header == "# vLLM 0.11.0"
    command = shlex.split(line)
    assert command[:3] == ["vllm", "serve", "Qwen/Qwen2.5-7B-Instruct"]
    assert "--enable-auto-tool-choice" in command
    assert command[command.index("--tool-call-parser") + 1] == "hermes"
    assert command[command.index("--max-model-len") + 1] == "16384"
    assert command[command.index("--structured-outputs-config") + 1] == '{"backend": "xgrammar"}'
    assert command[command.index("--served-model-name") + 1] == "qwen2.5-7b-instruct"
    assert command[-2:] == ["--tensor-parallel-size", "2"]  # extra flags pass through


def test_the_tool_parser_follows_the_model_family_unless_given() -> None:
    llama = _run(
        "--model", "meta-llama/Llama-3.1-8B-Instruct", "--dry-run", "--vllm-version", "0.11.0"
    )
    assert "--tool-call-parser llama3_json" in llama.stdout
    assert "--chat-template" in llama.stderr  # Llama 3.x wants its tool template
    given = _run("--model", "org/custom", "--tool-call-parser", "pythonic", "--dry-run",
                 "--vllm-version", "0.11.0")  # fmt: skip
    assert "--tool-call-parser pythonic" in given.stdout


def test_a_model_of_unknown_family_needs_its_parser_named() -> None:
    done = _run("--model", "org/custom", "--dry-run", "--vllm-version", "0.11.0")
    assert done.returncode == 1 and done.stdout == ""
    assert "no tool-call parser known for 'org/custom': pass --tool-call-parser" in done.stderr


def test_bad_options_are_refused_with_the_reason() -> None:
    no_model = _run("--base-url", "http://127.0.0.1:9/v1", "--dry-run")
    assert no_model.returncode == 2 and "it needs --model" in no_model.stderr
    bad = _run("--model", "Qwen/Qwen2.5-7B", "--concurrency", "1,x", "--dry-run")
    assert bad.returncode == 2 and "--concurrency takes positive integers" in bad.stderr
    neither = _run("--dry-run")
    assert neither.returncode == 2 and "one of the arguments --model --base-url" in neither.stderr


def test_without_vllm_installed_it_says_how_to_install_it() -> None:
    done = _run("--model", "Qwen/Qwen2.5-7B-Instruct", "--dry-run", "--vllm", "/nonexistent/vllm")
    assert done.returncode == 1
    assert "vLLM is not installed here (pip install vllm)" in done.stderr


def test_the_real_model_fixture_uses_the_server_the_script_names(tmp_path: Path) -> None:
    """LEAFLAB_REAL_MODEL_URL: the tier runs against that server (here the simulator,
    standing in for vLLM) and skips what would restart it."""
    sim = start_subprocess()
    probe = tmp_path / "test_probe.py"
    probe.write_text(
        "from tests.fixtures.real_model import real_model  # noqa: F401\n"
        "def test_uses_it(real_model):\n"
        f"    assert real_model.base_url == {sim.base_url!r}\n"
        "    assert real_model.model == 'leaflab-sim' and real_model.n_ctx > 0\n"
        "def test_restart_is_skipped(real_model):\n"
        "    real_model.restart()\n"
    )
    try:
        done = subprocess.run(  # noqa: S603 - pytest on the probe
            [sys.executable, "-m", "pytest", str(probe), "-q", "-rs", "-p", "no:cacheprovider"],
            cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
            env={**os.environ, "LEAFLAB_REAL_MODEL_URL": sim.base_url},
        )  # fmt: skip
    finally:
        sim.stop()
    assert "1 passed, 1 skipped" in done.stdout, done.stdout + done.stderr
    assert "an external server is not restarted by the tests" in done.stdout


def test_against_a_running_server_it_runs_the_throughput_step() -> None:
    """--base-url: no vLLM to start; the latency benchmark runs through Leaflab."""
    sim = start_subprocess(latency_ms=10)
    try:
        done = _run("--base-url", sim.base_url, "--skip-checks", "--concurrency", "1,2",
                    "--rounds", "1", "--max-tokens", "8")  # fmt: skip
    finally:
        sim.stop()
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "=== throughput through Leaflab: ok" in done.stdout
    assert "concurrency 2:" in done.stdout and "job / direct (worker's request)" in done.stdout
