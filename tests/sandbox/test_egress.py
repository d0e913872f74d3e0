"""A network-enabled sandbox reaches the outside world, never this host or a private range.

Everything probed is made by the test: canary listeners on the host side of
the sandbox network (its gateway, read from Docker after Leaflab made the
network) and on loopback, a metrics server bound to every address, and a
network namespace standing in for the world outside (``outside.py``) with a
"public" (TEST-NET-2) and a private (10/8) server on it. No internet is needed
to prove egress works: the public stand-in is reached exactly as a real
server would be — forwarded by this host and masqueraded — so what separates
it from the private one is the egress rules alone.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import docker
import pytest
from celery import Celery
from sqlalchemy.orm import Session, sessionmaker

from services.common.metrics import start_metrics_server, stop_metrics_server
from services.sandbox.backends.docker.containers import LABEL_OWNER
from services.sandbox.backends.docker.egress import remove_egress
from services.sandbox.service import SandboxRuntime
from services.sandbox.settings import SandboxSettings
from services.worker.tools.base import ToolResult
from services.worker.tools.code import PythonArgs, PythonTool
from tests.sandbox.conftest import JobRefs, WorkerProc, make_job, tool_ctx
from tests.sandbox.listeners import Listener
from tests.sandbox.outside import Outside, outside_world

# Each target: connect, print CONNECTED plus the first line the server sent, or the errno.
PROBE = (
    "import errno, json, socket\n"
    "out = []\n"
    "for host, port in json.loads({targets!r}):\n"
    "    s = socket.socket(); s.settimeout(4)\n"
    "    try:\n"
    "        s.connect((host, port)); out.append('CONNECTED ' + s.recv(64).decode().strip())\n"
    "    except OSError as e:\n"
    "        out.append(errno.errorcode.get(e.errno, 'timeout' if e.errno is None else e.errno))\n"
    "    finally:\n"
    "        s.close()\n"
    "print(json.dumps(out))\n"
)
# What the egress rules answer: ICMP "administratively prohibited", so code fails at once.
REJECTED = "EHOSTUNREACH"


def run_python(refs: JobRefs, celery: Celery, settings: SandboxSettings, code: str) -> ToolResult:
    return PythonTool().run(PythonArgs(code=code, timeout=60), tool_ctx(refs, celery, settings))


def network_mode(client: docker.DockerClient, result: ToolResult) -> str:
    container = client.api.inspect_container(result.data["sandbox_id"])
    return str(container["HostConfig"]["NetworkMode"])


def _container_address(
    client: docker.DockerClient, settings: SandboxSettings, session_id: str, timeout_s: float = 60
) -> str:
    """The sandbox-network address of the container bound to ``session_id``'s workspace."""
    name = settings.sandbox_egress_network
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for summary in client.api.containers(filters={"network": name}):
            if any(str(m.get("Source", "")).endswith(session_id) for m in summary["Mounts"]):
                return str(summary["NetworkSettings"]["Networks"][name]["IPAddress"])
        time.sleep(0.2)
    raise AssertionError(f"no sandbox container for session {session_id} on {name}")


@pytest.fixture
def outside() -> Iterator[Outside]:
    with outside_world() as world:
        yield world


class TestNetworkEnabledSandbox:
    def test_reaches_the_outside_but_not_the_host_or_private_ranges(
        self,
        session_factory: sessionmaker[Session],
        celery_client: Celery,
        sandbox_settings: SandboxSettings,
        sandbox_worker: WorkerProc,
        docker_ready: docker.DockerClient,
        outside: Outside,
    ) -> None:
        refs = make_job(session_factory, allow_network=True)
        # The first network-enabled exec makes the network; the host's address on it
        # is then whatever Docker gave it.
        first = run_python(refs, celery_client, sandbox_settings, "print('up')")
        name = sandbox_settings.sandbox_egress_network
        assert network_mode(docker_ready, first) == name  # never Docker's default bridge
        attrs = docker_ready.api.inspect_network(name)
        gateway = str(attrs["IPAM"]["Config"][0]["Gateway"])
        assert attrs["Options"]["com.docker.network.bridge.enable_icc"] == "false"

        canary, loopback = Listener(gateway), Listener("127.0.0.1")
        # A metrics server as an operator might bind it: on every address, no token.
        metrics = start_metrics_server(0, addr="0.0.0.0", token=None)  # noqa: S104
        assert metrics is not None
        targets = [
            (gateway, canary.port),  # this host, on the sandbox network
            (gateway, metrics),  # a host service bound to 0.0.0.0
            (outside.public_host, metrics),  # this host's "public" address
            ("127.0.0.1", loopback.port),  # the sandbox's own loopback, not the host's
            (outside.private_server, outside.port),  # a private-range server
            (outside.public_server, outside.port),  # the outside world
        ]
        try:
            code = PROBE.format(targets=json.dumps(targets))
            probe = run_python(refs, celery_client, sandbox_settings, code)
        finally:
            stop_metrics_server(metrics)
            canary.close()
            loopback.close()
        results = json.loads(probe.data["stdout"])
        assert results == [
            REJECTED,
            REJECTED,
            REJECTED,
            "ECONNREFUSED",
            REJECTED,
            "CONNECTED outside",
        ], probe.content
        assert canary.accepted == [] and loopback.accepted == []
        # The outside server saw one connection, from this host's address (masqueraded).
        assert outside.peers() == [outside.public_host]

    def test_sandboxes_on_the_network_do_not_reach_each_other(
        self,
        session_factory: sessionmaker[Session],
        celery_client: Celery,
        sandbox_settings: SandboxSettings,
        sandbox_worker: WorkerProc,
        docker_ready: docker.DockerClient,
    ) -> None:
        # Another session's sandbox (another user's, say) listens; this one tries it.
        listening, probing = (make_job(session_factory, allow_network=True) for _ in range(2))
        listen_code = (
            "import socket\n"
            "s = socket.socket(); s.bind(('0.0.0.0', 5555)); s.listen(4); s.settimeout(12)\n"
            "try:\n    s.accept(); print('ACCEPTED')\n"
            "except OSError:\n    print('NOBODY')\n"
        )
        with ThreadPoolExecutor(1) as pool:
            listener = pool.submit(
                run_python, listening, celery_client, sandbox_settings, listen_code
            )
            address = _container_address(docker_ready, sandbox_settings, listening.session_id)
            time.sleep(1)  # let it bind (refused or rejected, the probe below fails anyway)
            targets = [(address, 5555)]
            probe = run_python(
                probing, celery_client, sandbox_settings, PROBE.format(targets=json.dumps(targets))
            )
            heard = listener.result(timeout=60)
        assert json.loads(probe.data["stdout"]) == [REJECTED], probe.content
        assert heard.data["stdout"].strip() == "NOBODY"

    def test_non_network_sandboxes_stay_without_network(
        self,
        session_factory: sessionmaker[Session],
        celery_client: Celery,
        sandbox_settings: SandboxSettings,
        sandbox_worker: WorkerProc,
        docker_ready: docker.DockerClient,
        outside: Outside,
    ) -> None:
        refs = make_job(session_factory, allow_network=False)
        targets = [(outside.public_server, outside.port)]
        probe = run_python(
            refs, celery_client, sandbox_settings, PROBE.format(targets=json.dumps(targets))
        )
        assert json.loads(probe.data["stdout"]) == ["ENETUNREACH"], probe.content
        assert network_mode(docker_ready, probe) == "none"
        assert outside.peers() == []


FAKE_IPTABLES = (
    "#!/bin/sh\n"
    'echo "iptables v1.8.9 (nf_tables): Could not fetch rule set generation id: '
    'Permission denied (you must be root)" >&2\n'
    "exit 4\n"
)


class TestWithoutFirewallPrivileges:
    def test_network_enabled_exec_is_refused_and_nothing_runs(
        self,
        session_factory: sessionmaker[Session],
        sandbox_settings: SandboxSettings,
        sandbox_image: str,
        sandbox_tables: None,
        docker_ready: docker.DockerClient,
        tmp_path: Path,
    ) -> None:
        # What a sandbox worker without root meets: every iptables command fails.
        fake = tmp_path / "iptables"
        fake.write_text(FAKE_IPTABLES)
        fake.chmod(0o755)
        settings = sandbox_settings.model_copy(
            update={
                "sandbox_egress_network": f"leaflab-egress-noperm-{uuid.uuid4().hex[:8]}",
                "sandbox_egress_iptables": str(fake),
                "sandbox_egress_ip6tables": str(fake),
                "sandbox_pool_spares": 0,
            }
        )
        runtime = SandboxRuntime(settings)
        refs = make_job(session_factory, allow_network=True)
        try:
            result = runtime.run(
                {
                    "tool_call_id": f"call_{uuid.uuid4().hex[:8]}",
                    "job_id": refs.job_id,
                    "session_id": refs.session_id,
                    "project_id": refs.project_id,
                    "language": "python",
                    "code": "open('ran', 'w').write('yes')",
                }
            )
            assert result["status"] == "error", result
            assert result["error"]["code"] == "sandbox_network_unavailable"
            assert "you must be root" in result["error"]["message"]
            started = docker_ready.api.containers(
                all=True, filters={"label": f"{LABEL_OWNER}={runtime.owner}"}
            )
            assert started == []  # no sandbox at all, on no other network
            assert not (settings.workspaces_dir / refs.session_id / "ran").exists()
        finally:
            runtime.close()
            real = settings.model_copy(
                update={
                    "sandbox_egress_iptables": "iptables",
                    "sandbox_egress_ip6tables": "ip6tables",
                }
            )
            remove_egress(docker_ready, real)
