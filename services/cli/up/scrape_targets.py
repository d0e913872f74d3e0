"""Where Prometheus finds the stack's metrics: a file_sd targets file under $LEAFLAB_HOME.

``leaflab up`` picks its metrics ports at start, so a static scrape config
cannot know them. It writes ``$LEAFLAB_HOME/prometheus/targets.json`` (file
based service discovery, re-read by Prometheus when it changes) and a
ready-to-use ``prometheus.yml`` next to it::

    prometheus --config.file ~/.leaflab/prometheus/prometheus.yml
"""

from __future__ import annotations

import json
from pathlib import Path

from services.cli.up.ports import StackPorts
from services.cli.up.stackfile import write_private

SCRAPE_INTERVAL = "15s"


def _target(host: str, port: int) -> str:
    # A server bound to every address is scraped over loopback.
    return f"{'127.0.0.1' if host in ('0.0.0.0', '::', '') else host}:{port}"


def targets(host: str, ports: StackPorts) -> list[dict[str, object]]:
    """One file_sd group per service, labelled like the compose scrape jobs."""
    groups: list[dict[str, object]] = [
        {"targets": [_target(host, ports.api)], "labels": {"job": "leaflab-api"}},
        {"targets": [_target("127.0.0.1", ports.library)], "labels": {"job": "leaflab-library"}},
    ]
    workers = [f"127.0.0.1:{p}" for n, p in sorted(ports.metrics.items()) if n.startswith("worker")]
    if workers:
        groups.append({"targets": workers, "labels": {"job": "leaflab-worker"}})
    sandbox = [f"127.0.0.1:{p}" for n, p in ports.metrics.items() if n == "sandbox-worker"]
    if sandbox:
        groups.append({"targets": sandbox, "labels": {"job": "leaflab-sandbox"}})
    return groups


def write_scrape_config(
    home: Path, host: str, ports: StackPorts, *, metrics_token: str | None = None
) -> Path:
    """Write targets.json and prometheus.yml; returns the directory holding them."""
    directory = home / "prometheus"
    directory.mkdir(mode=0o700, exist_ok=True)
    targets_file = directory / "targets.json"
    write_private(targets_file, json.dumps(targets(host, ports), indent=2) + "\n")
    job: dict[str, object] = {
        "job_name": "leaflab",
        "file_sd_configs": [{"files": [str(targets_file)]}],
    }
    if metrics_token:
        token_file = directory / "metrics.token"
        write_private(token_file, metrics_token + "\n")
        job["authorization"] = {"type": "Bearer", "credentials_file": str(token_file)}
    config = {
        "global": {"scrape_interval": SCRAPE_INTERVAL, "evaluation_interval": SCRAPE_INTERVAL},
        "scrape_configs": [job],
    }
    # JSON is valid YAML: no YAML writer needed.
    write_private(directory / "prometheus.yml", json.dumps(config, indent=2) + "\n")
    return directory
