"""vLLM on a GPU, the production path: start it with the flags Leaflab's features need,
run the real-model checks against it, then a throughput run through Leaflab.

    .venv/bin/python -m bench.gpu.vllm_checks --model Qwen/Qwen2.5-7B-Instruct
    .venv/bin/python -m bench.gpu.vllm_checks --model /models/llama-3.1-8b --served-name llama
    .venv/bin/python -m bench.gpu.vllm_checks --base-url http://gpu-host:8000/v1   # running already
    .venv/bin/python -m bench.gpu.vllm_checks --model Qwen/Qwen2.5-7B-Instruct --dry-run

Needs a machine with an NVIDIA GPU, ``pip install vllm`` (the ``vllm`` command on
PATH, or ``--vllm``) and Leaflab's test services (PostgreSQL, Redis:
scripts/ensure_services.sh). Targets vLLM 0.10.2 and later: ``vllm serve`` with
``--structured-outputs-config`` (before 0.10.2 the same setting was
``--guided-decoding-backend``; the script reads the installed version and picks
the form, ``--vllm-version`` overrides it for a dry run).

The vLLM command (``--dry-run`` prints it and exits):

- ``--enable-auto-tool-choice --tool-call-parser P``: native tool calls with
  ``tool_choice: "auto"``, which Leaflab sends with its tools; P from the model's
  family (:data:`TOOL_PARSERS`, ``--tool-call-parser`` overrides);
- ``--max-model-len N``: the context window; vLLM reports it as ``max_model_len``
  in ``/v1/models``, where Leaflab's endpoint discovery reads it;
- the structured-output backend (xgrammar): ``response_format: json_schema``
  as the survey sends it;
- ``--enable-prefix-caching``, ``--served-model-name``, ``--api-key``.

Then, in order (each step's outcome printed; the exit status is 1 if any failed):

1. the real-model test tier (``tests/real_model/``) with
   ``LEAFLAB_REAL_MODEL_URL`` / ``LEAFLAB_REAL_MODEL_NAME`` pointing at this server;
2. ``bench.real_model_latency --base-url … --concurrency 1,16,64``: direct
   against through Leaflab (ModelClient and whole jobs), throughput included.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]

# Tool-call parsers by model family (vLLM's docs, "Tool Calling"): first match wins.
TOOL_PARSERS: list[tuple[str, str]] = [
    (r"qwen3-coder", "qwen3_coder"),
    (r"qwen", "hermes"),  # Qwen2.5 and Qwen3 use Hermes-style <tool_call> tags
    (r"hermes", "hermes"),
    (r"llama-?4", "llama4_pythonic"),
    (r"llama-?3", "llama3_json"),
    (r"mistral|mixtral|ministral", "mistral"),
    (r"granite", "granite"),
    (r"internlm", "internlm"),
    (r"deepseek-?v3", "deepseek_v3"),
    (r"gpt-oss", "openai"),
    (r"xlam", "xlam"),
]
FIRST_STRUCTURED_OUTPUTS_CONFIG = (0, 10, 2)  # vLLM PR #22772: --guided-decoding-* removed


def tool_parser_for(model: str) -> str | None:
    name = model.lower()
    return next((parser for pattern, parser in TOOL_PARSERS if re.search(pattern, name)), None)


def version_tuple(version: str) -> tuple[int, ...]:
    """``0.10.2`` → (0, 10, 2); a suffix (``0.11.0rc1``, ``+cu128``) is ignored."""
    parts = re.findall(r"\d+", version.split("+")[0])[:3]
    if not parts:
        raise ValueError(f"not a vLLM version: {version!r}")
    return tuple(int(p) for p in parts)


def vllm_command(args: argparse.Namespace, version: str) -> list[str]:
    """``vllm serve`` with the flags Leaflab's features need, for ``version``."""
    parser = args.tool_call_parser or tool_parser_for(args.model)
    if parser is None:
        raise SystemExit(
            f"no tool-call parser known for {args.model!r}: pass --tool-call-parser "
            "(vLLM docs, 'Tool Calling', list them per model family)"
        )
    command = [args.vllm, "serve", args.model,
               "--served-model-name", args.served_name or Path(args.model).name.lower(),
               "--host", args.host, "--port", str(args.port),
               "--api-key", args.api_key,
               "--enable-auto-tool-choice", "--tool-call-parser", parser,
               "--max-model-len", str(args.max_model_len),
               "--gpu-memory-utilization", str(args.gpu_memory_utilization),
               "--enable-prefix-caching"]  # fmt: skip
    if version_tuple(version) >= FIRST_STRUCTURED_OUTPUTS_CONFIG:
        command += ["--structured-outputs-config", f'{{"backend": "{args.structured_backend}"}}']
    else:
        command += ["--guided-decoding-backend", args.structured_backend]
    if args.chat_template:
        command += ["--chat-template", args.chat_template]
    elif parser == "llama3_json":
        # vLLM's docs: Llama 3.x calls tools reliably only with its tool chat template.
        note = "examples/tool_chat_template_llama3.1_json.jinja (in vLLM's repository)"
        print(f"note: Llama 3.x tool calls want --chat-template {note}", file=sys.stderr)
    return command + list(args.extra)


def installed_vllm_version(vllm: str) -> str:
    python = Path(shutil.which(vllm) or vllm).with_name("python")
    probe = [str(python if python.exists() else sys.executable), "-c",
             "import vllm; print(vllm.__version__)"]  # fmt: skip
    done = subprocess.run(probe, capture_output=True, text=True, check=False)  # noqa: S603
    if done.returncode != 0:
        raise SystemExit(f"vLLM is not installed here (pip install vllm): {done.stderr[-300:]}")
    return done.stdout.strip()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--model", help="Hugging Face name or local path vLLM serves")
    where.add_argument("--base-url", help="a vLLM already running (…/v1): skip starting one")
    parser.add_argument("--served-name", help="model name served (default: the path's last part)")
    parser.add_argument("--tool-call-parser", help="default: from the model's family")
    parser.add_argument("--chat-template", help="a tool-calling chat template (Llama 3.x)")
    parser.add_argument("--max-model-len", type=int, default=32768)
    parser.add_argument(
        "--structured-backend",
        default="xgrammar",
        choices=["auto", "xgrammar", "guidance", "outlines"],
    )
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.90)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--api-key", default=os.environ.get("LEAFLAB_LLM_API_KEY", "sk-local"))
    parser.add_argument("--vllm", default="vllm", help="the vllm command")
    parser.add_argument("--vllm-version", help="default: the installed vLLM's")
    parser.add_argument("--concurrency", default="1,16,64")
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--skip-checks", action="store_true", help="throughput run only")
    parser.add_argument("--dry-run", action="store_true", help="print the vLLM command, exit")
    parser.add_argument("extra", nargs="*", help="after --: more vllm serve flags")
    args = parser.parse_args(argv)  # fmt: skip
    if args.dry_run and not args.model:
        parser.error("--dry-run prints the command that starts vLLM: it needs --model")
    if not all(c.strip().isdigit() and int(c) > 0 for c in args.concurrency.split(",")):
        parser.error(f"--concurrency takes positive integers, e.g. 1,16,64: {args.concurrency!r}")
    return args


def start_vllm(
    command: list[str], base_url: str, api_key: str, log: Path
) -> subprocess.Popen[bytes]:
    """vLLM as a child process group; returns once ``/v1/models`` answers (weights loaded)."""
    print("starting:", shlex.join(command), f"(log {log})", flush=True)
    out = open(log, "ab")  # noqa: SIM115 - the process's log for its whole life
    proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)  # noqa: S603
    deadline = time.monotonic() + 1800  # a first download of the weights can take a while
    headers = {"Authorization": f"Bearer {api_key}"}
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"vLLM exited ({proc.returncode}); see {log}")
        try:
            if httpx.get(f"{base_url}/models", headers=headers, timeout=5).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(2)
    stop(proc)
    raise SystemExit(f"vLLM did not answer at {base_url} in 30 minutes; see {log}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)


def run_steps(args: argparse.Namespace, base_url: str, model: str) -> int:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "LEAFLAB_ENV": "test",
        "LEAFLAB_REAL_MODEL_URL": base_url,
        "LEAFLAB_REAL_MODEL_NAME": model,
        "LEAFLAB_REAL_MODEL_API_KEY": args.api_key,
    }
    python = sys.executable
    steps = []
    if not args.skip_checks:
        # test_server.py pins llama.cpp's own server (Gemma's alias and template), not Leaflab.
        tier = [python, "-m", "pytest", "tests/real_model", "-q", "-rs",
                "--ignore=tests/real_model/test_server.py"]  # fmt: skip
        steps.append(("real-model checks", tier))
    steps.append(("throughput through Leaflab", [
        python, "-m", "bench.real_model_latency", "--base-url", base_url, "--model", model,
        "--api-key", args.api_key, "--concurrency", args.concurrency,
        "--max-tokens", str(args.max_tokens), "--rounds", str(args.rounds),
        "--worker-threads", str(max(int(c) for c in args.concurrency.split(",")))]))  # fmt: skip
    failed = 0
    for name, argv in steps:
        print(f"\n=== {name}: {shlex.join(argv)}", flush=True)
        code = subprocess.call(argv, cwd=ROOT, env=env)  # noqa: S603 - our own tests and bench
        print(f"=== {name}: {'ok' if code == 0 else f'FAILED (exit {code})'}", flush=True)
        failed += code != 0
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.base_url:
        from bench.real_model_server import served_model

        base_url = args.base_url.rstrip("/")
        return run_steps(args, base_url, args.served_name or served_model(base_url, args.api_key))
    version = args.vllm_version or installed_vllm_version(args.vllm)
    command = vllm_command(args, version)
    if args.dry_run:
        print(f"# vLLM {version}")
        print(shlex.join(command))
        return 0
    base_url = f"http://{args.host}:{args.port}/v1"
    log = Path(tempfile.mkdtemp(prefix="leaflab-vllm-")) / "vllm.log"
    proc = start_vllm(command, base_url, args.api_key, log)
    try:
        return run_steps(args, base_url, command[command.index("--served-model-name") + 1])
    finally:
        stop(proc)


if __name__ == "__main__":
    raise SystemExit(main())
