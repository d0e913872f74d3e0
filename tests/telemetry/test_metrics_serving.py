"""Metrics endpoints as operators meet them: a taken port never stops a worker; tokens."""

from __future__ import annotations

import socket
import time

import httpx
import pytest
from sqlalchemy.orm import Session, sessionmaker

from services.common.metrics import start_metrics_server, stop_metrics_server
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.listening import listening_addresses
from tests.fixtures.processes import Proc, Services, free_port

BIND_FAILURE = "metrics server could not listen"


def _wait_for_log(procs: list[Proc], text: str, timeout_s: float = 90.0) -> Proc:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for proc in procs:
            if text in proc.log():
                return proc
        time.sleep(0.3)
    logs = "\n---\n".join(p.log()[-2000:] for p in procs)
    raise AssertionError(f"no worker logged {text!r}:\n{logs}")


class TestWorkerMetricsPort:
    def test_worker_whose_metrics_port_is_taken_logs_it_and_serves_jobs(
        self, services: Services, session_factory: sessionmaker[Session]
    ) -> None:
        # What a second worker process given the same LEAFLAB_METRICS_PORT meets.
        with socket.socket() as taken:
            taken.bind(("0.0.0.0", 0))
            taken.listen()
            services.env["LEAFLAB_METRICS_PORT"] = str(taken.getsockname()[1])
            services.simulator({"replies": [{"content": "served"}]})
            url = services.api()
            worker = services.worker()
            _wait_for_log([worker], BIND_FAILURE)
            client = client_for(url, make_user(session_factory))
            session = client.post("/v1/sessions", json={}).json()
            body = {"content": "hi"}
            job = client.post(f"/v1/sessions/{session['id']}/messages", json=body).json()
            assert wait_job(client, job["job_id"], timeout_s=90)["status"] == "succeeded"
            assert worker.popen.poll() is None

    def test_two_workers_with_their_own_ports_both_expose_metrics(self, services: Services) -> None:
        ports = [free_port(), free_port()]
        for index, port in enumerate(ports):
            services.env["LEAFLAB_METRICS_PORT"] = str(port)
            services.worker(f"w{index}")
        deadline = time.monotonic() + 90
        pending = set(ports)
        while pending and time.monotonic() < deadline:
            for port in list(pending):
                try:
                    resp = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2)
                    if resp.status_code == 200:
                        pending.discard(port)
                except httpx.HTTPError:
                    pass
            time.sleep(0.3)
        assert not pending, [p.log()[-2000:] for p in services.procs]


class TestMetricsToken:
    def test_worker_server_demands_the_bearer_token(self) -> None:
        port = start_metrics_server(0, addr="127.0.0.1", token="metrics-secret-1")
        assert port is not None
        try:
            url = f"http://127.0.0.1:{port}/metrics"
            refused = httpx.get(url, timeout=5)
            assert refused.status_code == 401
            assert refused.json()["error"]["code"] == "unauthorized"
            wrong = httpx.get(url, headers={"Authorization": "Bearer nope"}, timeout=5)
            assert wrong.status_code == 401
            ok = httpx.get(url, headers={"Authorization": "Bearer metrics-secret-1"}, timeout=5)
            assert ok.status_code == 200 and "leaflab_" in ok.text
        finally:
            stop_metrics_server(port)

    def test_api_metrics_route_demands_the_token_from_the_environment(
        self, services: Services
    ) -> None:
        services.env["LEAFLAB_METRICS_TOKEN"] = "api-metrics-secret"
        url = services.api()
        assert httpx.get(f"{url}/metrics", timeout=10).status_code == 401
        headers = {"Authorization": "Bearer api-metrics-secret"}
        ok = httpx.get(f"{url}/metrics", headers=headers, timeout=10)
        assert ok.status_code == 200 and "leaflab_http_requests" in ok.text


class TestMetricsBind:
    def test_worker_server_listens_on_loopback_only_by_default(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.delenv("LEAFLAB_METRICS_BIND", raising=False)
        port = start_metrics_server(0, token=None)
        assert port is not None
        try:
            # Not on 0.0.0.0: no other host, and no sandbox on a bridge, reaches it.
            assert listening_addresses(port) == {"127.0.0.1"}
        finally:
            stop_metrics_server(port)

    def test_bind_and_token_come_from_the_environment(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # An operator who opens the port beyond loopback; the token guards it.
        monkeypatch.setenv("LEAFLAB_METRICS_BIND", "0.0.0.0")
        monkeypatch.setenv("LEAFLAB_METRICS_TOKEN", "env-metrics-secret")
        port = start_metrics_server(0)
        assert port is not None
        try:
            assert listening_addresses(port) == {"0.0.0.0"}
            url = f"http://127.0.0.1:{port}/metrics"
            assert httpx.get(url, timeout=5).status_code == 401
            headers = {"Authorization": "Bearer env-metrics-secret"}
            assert httpx.get(url, headers=headers, timeout=5).status_code == 200
        finally:
            stop_metrics_server(port)
