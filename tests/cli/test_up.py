"""`leaflab up` as a new user runs it: ready means ready, crashes, signals, collisions.

Each test starts real stacks (embedded PostgreSQL and Redis, API, library,
workers, simulator), so they are few and each checks several things.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import time
from pathlib import Path

import httpx

from tests.cli.up_harness import (
    PDF,
    UpStack,
    descendants,
    kill_group,
    new_home,
    remove,
    start_up,
    stop,
    wait_until_gone,
)
from tests.fixtures.listening import listening_addresses
from tests.fixtures.processes import free_port


def _worker_pid(stack: UpStack) -> int:
    return int(stack.record()["children"]["worker-1"])


def _wait_worker_restarted(stack: UpStack, timeout_s: float = 120) -> None:
    """Until the restarted worker consumes again (Celery logs "<node> ready." each start)."""
    log = stack.home / "logs" / "worker-1.log"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if log.read_text(errors="replace").count(" ready.") >= 2:
            return
        time.sleep(0.5)
    raise AssertionError(f"worker was not restarted:\n{stack.text()}")


def _document_status(stack: UpStack, doc_id: str, timeout_s: float = 300) -> str:
    headers = {"Authorization": f"Bearer {stack.key()}"}
    deadline = time.monotonic() + timeout_s
    status = ""
    while time.monotonic() < deadline:
        resp = httpx.get(f"{stack.url}/v1/library/documents/{doc_id}", headers=headers, timeout=10)
        status = resp.json().get("status", "")
        if status in ("ready", "failed"):
            return status
        time.sleep(1)
    return status


class TestUpServes:
    def test_ready_means_ingest_and_jobs_work_then_crash_stop_and_restart(self) -> None:
        home = new_home()
        api_port = free_port()
        stack = start_up(home, api_port)
        try:
            # The banner names the model and says plainly that it is the simulator.
            banner = stack.text()
            assert "model: leaflab-sim at http://127.0.0.1:" in banner
            assert "SIMULATOR" in banner and "--model-url" in banner
            # The first thing a user does after "ready": ingest a paper, run a job.
            ingested = stack.cli("library", "ingest", "--no-wait", str(PDF))
            assert ingested.returncode == 0, ingested.stdout + ingested.stderr
            doc_id = ingested.stdout.split()[-1]
            submitted = stack.cli("submit", "hello there", "--watch")
            assert submitted.returncode == 0, submitted.stdout + submitted.stderr
            assert "[succeeded]" in submitted.stdout
            assert _document_status(stack, doc_id) == "ready"

            key = stack.key()
            assert key.startswith("lf_")
            for secret in ("admin.key", "internal.token", "metrics.token", "stack.json"):
                assert stat.S_IMODE((home / secret).stat().st_mode) == 0o600, secret
            # The API's /metrics is never open; the stack's scrape config has the token.
            token = (home / "metrics.token").read_text().strip()
            assert httpx.get(f"{stack.url}/metrics", timeout=10).status_code == 401
            scraped = httpx.get(
                f"{stack.url}/metrics", headers={"Authorization": f"Bearer {token}"}, timeout=10
            )
            assert scraped.status_code == 200 and "leaflab_" in scraped.text
            scrape = json.loads((home / "prometheus" / "prometheus.yml").read_text())
            auth = scrape["scrape_configs"][0]["authorization"]
            assert Path(auth["credentials_file"]).read_text().strip() == token
            for private in ("logs", "redis", "prometheus"):
                assert stat.S_IMODE((home / private).stat().st_mode) == 0o700, private
            for data in (home / "redis").iterdir():
                if data.is_file():
                    assert stat.S_IMODE(data.stat().st_mode) & 0o077 == 0, data

            # Nothing of the stack listens on every address: its API on the --host asked
            # for (loopback by default), the workers' metrics and the rest on loopback.
            ports = stack.record()["ports"]
            assert {"worker-1-metrics", "model-sim"} <= set(ports), ports
            for name, port in ports.items():
                assert listening_addresses(port) == {"127.0.0.1"}, name
            # The simulator's control API answers the stack's internal token only.
            sim = f"http://127.0.0.1:{ports['model-sim']}"
            assert httpx.get(f"{sim}/_sim/stats", timeout=10).status_code == 401
            internal = {"X-Leaflab-Internal": (home / "internal.token").read_text().strip()}
            assert httpx.get(f"{sim}/_sim/stats", headers=internal, timeout=10).status_code == 200

            os.kill(_worker_pid(stack), signal.SIGKILL)  # the supervisor must restart it
            _wait_worker_restarted(stack)
            again = stack.cli("submit", "after the crash", "--watch")
            assert again.returncode == 0, again.stdout + again.stderr
        finally:
            code = stop(stack)
            kill_group(stack)
        assert code == 0 and "stopped" in stack.text()

        stack = start_up(home, api_port)
        try:
            assert stack.key() == key  # same data, same admin
            listed = httpx.get(
                f"{stack.url}/v1/jobs", headers={"Authorization": f"Bearer {key}"}, timeout=10
            ).json()["items"]
            assert len(listed) == 2 and {j["status"] for j in listed} == {"succeeded"}
        finally:
            stop(stack)
            kill_group(stack)
            remove(home)


class TestUpLifetime:
    def test_collisions_side_by_side_stacks_sighup_and_kill_9(self) -> None:
        home_a, home_b = new_home(), new_home()
        port_a, port_b = free_port(), free_port()
        a = start_up(home_a, port_a)
        b: UpStack | None = None
        try:
            record_a = a.record()
            assert record_a["pid"] == a.proc.pid

            # A second stack on the same home is refused, naming the live one.
            same_home = a.cli("up", "--port", str(free_port()), timeout=120)
            assert same_home.returncode != 0
            assert f"LEAFLAB_HOME {home_a} is in use" in same_home.stderr
            assert f"pid {a.proc.pid}" in same_home.stderr

            # Another home on the same API port is refused, naming the holder.
            b_on_a_port = UpStack(home_b, port_a, a.proc, a.output)
            same_port = b_on_a_port.cli("up", "--port", str(port_a), timeout=120)
            assert same_port.returncode != 0
            assert f"port {port_a} (API) is in use" in same_port.stderr
            assert f"LEAFLAB_HOME={home_a}" in same_port.stderr

            # Another home and port runs side by side: no internal port shared.
            b = start_up(home_b, port_b)
            record_b = b.record()
            assert not set(record_a["ports"].values()) & set(record_b["ports"].values())
            for stack in (a, b):
                assert httpx.get(f"{stack.url}/healthz", timeout=10).status_code == 200

            # Closing A's terminal (SIGHUP) stops every process of A and frees its ports.
            tree_a = descendants(a.proc.pid)
            assert set(record_a["children"].values()) <= tree_a
            assert stop(a, signal.SIGHUP) == 0
            left, taken = wait_until_gone(home_a, list(record_a["ports"].values()), tree_a)
            assert left == [] and taken == [], (left, taken)
            assert httpx.get(f"{b.url}/healthz", timeout=10).status_code == 200

            # B's supervisor killed outright: its children die with it.
            tree_b = descendants(b.proc.pid)
            assert set(record_b["children"].values()) <= tree_b
            b.proc.kill()
            b.proc.wait(timeout=30)
            started = time.monotonic()
            left, taken = wait_until_gone(home_b, list(record_b["ports"].values()), tree_b)
            print(f"kill -9: stack gone after {time.monotonic() - started:.1f}s")
            assert left == [] and taken == [], (left, taken)
        finally:
            for started_stack in (a, b):
                if started_stack is not None:
                    kill_group(started_stack)
            remove(home_a)
            remove(home_b)
