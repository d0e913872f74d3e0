"""Every Grafana dashboard query returns data from a real Prometheus scraping `leaflab up`.

The stack runs one job that uses the model, a workspace tool, the sandbox
(python) and the library (library_search), after a paper was ingested;
Prometheus (Debian's package) discovers the stack's metrics endpoints from
the file_sd targets `leaflab up` writes under $LEAFLAB_HOME.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cli.up_harness import PDF, UpStack, kill_group, new_home, remove, start_up, stop
from tests.fixtures.processes import free_port

ROOT = Path(__file__).resolve().parents[2]
DASHBOARDS = sorted((ROOT / "deploy" / "grafana" / "dashboards").glob("*.json"))
SCRIPT = {
    "replies": [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.md", "content": "hi"}}]},
        {"tool_calls": [{"name": "python", "arguments": {"code": "print(6 * 7)"}}]},
        {"tool_calls": [{"name": "library_search", "arguments": {"query": "citation"}}]},
        {"content": "Done"},
    ]
}
# Grafana's variables, as a dashboard opened on the last hour fills them in.
GRAFANA_VARIABLES = {"$__range": "1h", "$__rate_interval": "1m", "$__interval": "15s"}


def dashboard_queries() -> list[tuple[str, str, str]]:
    """(dashboard, panel title, PromQL) for every Prometheus target of every dashboard."""
    found = []
    for path in DASHBOARDS:
        dashboard = json.loads(path.read_text())
        panels = [p for top in dashboard["panels"] for p in (top, *top.get("panels", []))]
        for panel in panels:
            for target in panel.get("targets", []):
                if "expr" in target:
                    found.append((path.stem, str(panel.get("title")), target["expr"]))
    return found


def _promql(expr: str) -> str:
    for name, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(name, value)
    return expr


@pytest.fixture(scope="module")
def stack() -> Iterator[UpStack]:
    home = new_home()
    home.mkdir(parents=True)
    script = home.parent / "script.json"
    script.write_text(json.dumps(SCRIPT))
    script.chmod(0o644)
    up = start_up(home, free_port(), model_sim=str(script))
    try:
        yield up
    finally:
        stop(up)
        kill_group(up)
        remove(home)


def _prometheus(up: UpStack, workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.fail("prometheus is missing: run scripts/ensure_services.sh (Debian package)")
    # The configuration `leaflab up` wrote, scraping every second instead of 15.
    config: dict[str, Any] = json.loads((up.home / "prometheus" / "prometheus.yml").read_text())
    config["global"]["scrape_interval"] = "1s"
    path = workdir / "prometheus.yml"
    path.write_text(json.dumps(config))
    port = free_port()
    proc = subprocess.Popen(
        [
            binary,
            f"--config.file={path}",
            f"--storage.tsdb.path={workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=(workdir / "prometheus.log").open("wb"),
        stderr=subprocess.STDOUT,
    )
    return proc, f"http://127.0.0.1:{port}"


def _query(url: str, expr: str) -> list[Any]:
    resp = httpx.get(f"{url}/api/v1/query", params={"query": _promql(expr)}, timeout=10)
    body = resp.json()
    assert body.get("status") == "success", (expr, body)
    return list(body["data"]["result"])


def _run_job(up: UpStack) -> None:
    ingested = up.cli("library", "ingest", "--no-wait", str(PDF))
    assert ingested.returncode == 0, ingested.stderr
    doc_id = ingested.stdout.split()[-1]
    headers = {"Authorization": f"Bearer {up.key()}"}
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        doc = httpx.get(f"{up.url}/v1/library/documents/{doc_id}", headers=headers, timeout=10)
        if doc.json().get("status") in ("ready", "failed"):
            break
        time.sleep(1)
    assert doc.json()["status"] == "ready", doc.json()
    submitted = up.cli("submit", "use every tool once", "--watch", timeout=300)
    assert submitted.returncode == 0 and "[succeeded]" in submitted.stdout, submitted.stdout
    for tool in ("write_file", "python", "library_search"):
        assert f"→ {tool}" in submitted.stdout, submitted.stdout


def test_every_dashboard_query_returns_data(stack: UpStack, tmp_path: Path) -> None:
    queries = dashboard_queries()
    assert len(queries) > 40
    prometheus, url = _prometheus(stack, tmp_path)
    try:
        _run_job(stack)
        targets: list[dict[str, Any]] = []
        empty: list[tuple[str, str, str]] = queries
        deadline = time.monotonic() + 120
        while empty and time.monotonic() < deadline:
            time.sleep(2)
            targets = httpx.get(f"{url}/api/v1/targets", timeout=10).json()["data"]["activeTargets"]
            empty = [q for q in queries if not _query(url, q[2])]
        jobs = {t["labels"]["job"]: t["health"] for t in targets}
        assert set(jobs) >= {"leaflab-api", "leaflab-library", "leaflab-worker", "leaflab-sandbox"}
        down = {job: health for job, health in jobs.items() if health != "up"}
        assert not down, f"targets down: {down}"
        report = "\n".join(f"  {board} / {title}: {expr}" for board, title, expr in empty)
        assert not empty, (
            f"{len(empty)} of {len(queries)} dashboard queries return nothing:\n{report}"
        )
    finally:
        prometheus.terminate()
        prometheus.wait(timeout=30)


def test_promql_variables_are_all_known() -> None:
    for _, _, expr in dashboard_queries():
        assert not re.search(r"\$\w+", _promql(expr)), expr
