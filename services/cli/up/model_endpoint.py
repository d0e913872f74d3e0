"""Which model `leaflab up` points the stack at, and the "model:" block of its ready banner.

Three kinds: the simulator (the default when nothing else is configured, clearly
labelled: its answers are made up), the local real model (``--local-model``: llama.cpp
on Gemma 3 270M, supervised like every other service) and an endpoint the user runs
(``--model-url``/``--model``, the same as LEAFLAB_LLM_BASE_URL/LEAFLAB_MODEL). Before
"ready" the configured endpoint is contacted (GET {base}/models); an endpoint that does
not answer is a loud warning, not a refusal to start (the model may still be loading).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

import click
import httpx

SIM_MODEL = "leaflab-sim"
PROBE_TIMEOUT_S = 5.0
# Discovery probes a real server (a few tiny calls): seconds, more on a loaded host.
DISCOVERY_TIMEOUT_S = 30.0
Kind = Literal["simulator", "local", "endpoint"]
CONNECT_HINT = (
    "connect a real model: leaflab up --model-url http://HOST:PORT/v1 --model NAME "
    "(vLLM, llama.cpp, a hosted API), or leaflab up --local-model"
)


@dataclass
class ModelChoice:
    """The model the stack's workers call. ``base_url`` of the simulator and of the local
    model is known once their port is chosen (:meth:`at`)."""

    kind: Kind
    model: str
    base_url: str = ""
    api_key: str | None = None
    # Configured by LEAFLAB_MODEL_PROFILES: the services read it themselves; `up` only
    # reports (and probes) the first profile and sets no endpoint variable.
    from_profiles: bool = False

    @property
    def simulated(self) -> bool:
        return self.kind == "simulator"

    def at(self, port: int) -> ModelChoice:
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self

    def env(self) -> dict[str, str]:
        """The variables every service gets: workers call this endpoint; the API knows
        (LEAFLAB_MODEL_SIMULATED) whether to show the chat page's simulator banner."""
        if self.from_profiles:
            return {"LEAFLAB_MODEL_SIMULATED": "false"}
        return {
            "LEAFLAB_LLM_BASE_URL": self.base_url,
            "LEAFLAB_MODEL": self.model,
            "LEAFLAB_MODEL_SIMULATED": "true" if self.simulated else "false",
        }


def choose_model(
    *,
    model_sim: str | None,
    local_model: bool,
    model_url: str | None,
    model: str | None,
    local_alias: str,
    environ: Mapping[str, str] = os.environ,
) -> ModelChoice:
    """The model from the flags, else from LEAFLAB_LLM_BASE_URL/LEAFLAB_MODEL, else the
    simulator. Contradicting flags are a usage error (nothing has started yet)."""
    picked = [
        name
        for name, on in (
            ("--model-sim", model_sim is not None),
            ("--local-model", local_model),
            ("--model-url", bool(model_url)),
        )
        if on
    ]
    if len(picked) > 1:
        raise click.UsageError(f"choose one model source, not {' and '.join(picked)}")
    if model_sim is not None:
        return ModelChoice("simulator", model or SIM_MODEL)
    if local_model:
        if model and model != local_alias:
            raise click.UsageError(f"--local-model serves {local_alias!r}; drop --model")
        return ModelChoice("local", local_alias)
    url = model_url or environ.get("LEAFLAB_LLM_BASE_URL")
    if url:
        name = model or environ.get("LEAFLAB_MODEL")
        if not name:
            raise click.UsageError(
                "which model does the endpoint serve? add --model NAME (or LEAFLAB_MODEL)"
            )
        return ModelChoice("endpoint", name, base_url=url.rstrip("/"), api_key=_api_key(environ))
    if model:
        raise click.UsageError("--model needs --model-url URL (or LEAFLAB_LLM_BASE_URL)")
    profile = _first_profile(environ)
    if profile is not None:
        return profile
    return ModelChoice("simulator", SIM_MODEL)


def _first_profile(environ: Mapping[str, str]) -> ModelChoice | None:
    """The first endpoint of LEAFLAB_MODEL_PROFILES (a JSON list), if any is configured;
    the workers validate the setting themselves, so a malformed one is not judged here."""
    try:
        profiles = json.loads(environ.get("LEAFLAB_MODEL_PROFILES") or "[]")
        first = profiles[0] if isinstance(profiles, list) and profiles else None
        url = str(first["base_url"]).rstrip("/") if isinstance(first, dict) else ""
    except (ValueError, KeyError):
        return None
    if not url:
        return None
    assert isinstance(first, dict)
    models = first.get("models") or []
    name = environ.get("LEAFLAB_MODEL") or (str(models[0]) if models else "(any)")
    key = first.get("api_key")
    return ModelChoice("endpoint", name, base_url=url, api_key=key, from_profiles=True)


def _api_key(environ: Mapping[str, str]) -> str | None:
    return environ.get("LEAFLAB_LLM_API_KEY") or None


@dataclass
class EndpointProbe:
    """What GET {base}/models answered: the models served, or why it did not answer."""

    reachable: bool
    models: list[str] = field(default_factory=list)
    error: str | None = None


def probe_endpoint(choice: ModelChoice, timeout_s: float = PROBE_TIMEOUT_S) -> EndpointProbe:
    """Contact the endpoint once; never raises (an unreachable endpoint is an answer)."""
    headers = {"Authorization": f"Bearer {choice.api_key}"} if choice.api_key else {}
    try:
        resp = httpx.get(f"{choice.base_url}/models", headers=headers, timeout=timeout_s)
    except httpx.HTTPError as exc:
        return EndpointProbe(
            False, error=f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        )
    if resp.status_code != 200:
        return EndpointProbe(False, error=f"HTTP {resp.status_code} from {choice.base_url}/models")
    try:
        data = resp.json().get("data") or []
        models = [str(m.get("id")) for m in data if isinstance(m, dict) and m.get("id")]
    except (ValueError, AttributeError):
        return EndpointProbe(True, error="its /models answer is not the OpenAI list format")
    return EndpointProbe(True, models=models)


def model_block_lines(
    choice: ModelChoice, probe: EndpointProbe, *, log: str | None = None
) -> list[str]:
    """The banner's model lines: name, endpoint, what it is; warnings when it does not
    answer or does not serve the model."""
    kind = {
        "simulator": "SIMULATOR (Leaflab's own; answers are simulated, not a real model)",
        "local": "local llama.cpp server (small CPU model), supervised"
        + (f"; log: {log}" if log else ""),
        "endpoint": "your endpoint"
        + (" (first of LEAFLAB_MODEL_PROFILES)" if choice.from_profiles else ""),
    }[choice.kind]
    lines = [f"model: {choice.model} at {choice.base_url}  [{kind}]"]
    if choice.simulated:
        lines.append(f"  {CONNECT_HINT}")
    if not probe.reachable:
        lines.append(
            f"WARNING: the model endpoint {choice.base_url} does not answer ({probe.error}); "
            "Leaflab runs, but model calls fail or wait until it does. Check the URL, "
            "that the server is up, and LEAFLAB_LLM_API_KEY."
        )
    elif probe.error:
        lines.append(f"WARNING: {choice.base_url}: {probe.error}")
    elif probe.models and choice.model not in probe.models and not choice.simulated:
        lines.append(
            f"WARNING: the endpoint serves {', '.join(probe.models)}, not {choice.model!r}; "
            "set --model (LEAFLAB_MODEL) to one of them"
        )
    return lines


def print_model_block(
    choice: ModelChoice,
    *,
    log: str | None = None,
    echo: Callable[[str], None] = click.echo,
) -> EndpointProbe:
    """Contact the configured endpoint and print the banner's model block.

    The capability summary (context length, tool mode, structured output) from endpoint
    discovery belongs right after these lines."""
    probe = probe_endpoint(choice)
    for line in model_block_lines(choice, probe, log=log):
        echo(line)
    if probe.reachable and not choice.simulated:
        for line in capability_lines(choice):
            echo(f"  {line}")
    return probe


def capability_lines(choice: ModelChoice) -> list[str]:
    """What discovery finds at the endpoint (context length, tool mode, structured output,
    role rules, concurrency), probed here once; a failure is one line, never a refusal."""
    # Imported here: only `up` pays for the worker's LLM modules, not every CLI command.
    from services.worker.operator import endpoint_summary

    overrides = {}
    if not choice.from_profiles:
        overrides = {
            "llm_base_url": choice.base_url,
            "model": choice.model,
            "llm_api_key": choice.api_key or "sk-local",
        }
    try:
        return endpoint_summary(timeout_s=DISCOVERY_TIMEOUT_S, overrides=overrides)
    except Exception as exc:  # a malformed setting or a probe bug must not stop `up`
        return [f"capabilities: not discovered ({type(exc).__name__}: {exc})"]
