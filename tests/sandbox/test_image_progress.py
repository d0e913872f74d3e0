"""The offline image build says what it is doing: phases and a package count as they
happen (a first `leaflab up` used to sit silent for minutes), and an unreachable
registry in words instead of Docker's DNS error. The build script here is a small
stand-in that writes what debootstrap and build_offline.sh write."""

from __future__ import annotations

import logging
import stat
from pathlib import Path

import docker.errors
import pytest

from services.cli.up.sandbox_setup import build_progress_shown
from services.sandbox.backends.base import SandboxUnavailable
from services.sandbox.image_offline import registry_unreachable, run_build_script

DOCKER_DNS_ERROR = (
    'Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io '
    "on 127.0.0.53:53: server misbehaving"
)


def _script(folder: Path, body: str) -> Path:
    path = folder / "build.sh"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_phases_and_a_package_count_are_reported_as_they_happen(tmp_path: Path) -> None:
    retrieving = "".join(f"echo 'I: Retrieving pkg{i} 1.0' >&2\n" for i in range(60))
    script = _script(
        tmp_path,
        "echo 'build_offline: debootstrap bookworm -> /x' >&2\n"
        "echo 'I: Retrieving InRelease' >&2\n"
        + retrieving
        + "echo 'I: Installing core packages...' >&2\n"
        "echo 'I: Configuring libc6:amd64...' >&2\n"
        "echo 'I: Configuring the base system...' >&2\n"
        "echo 'build_offline: docker import leaflab-sandbox:t' >&2\n",
    )
    said: list[str] = []
    run_build_script(script, "leaflab-sandbox:t", tmp_path / "rootfs", say=said.append)
    assert said[0].startswith("building leaflab-sandbox:t offline from Debian packages")
    assert any(s.startswith("debootstrap bookworm -> /x (0m") for s in said), said
    counts = [s for s in said if "Debian packages fetched" in s]
    assert [c.split(" Debian")[0] for c in counts] == [
        "debootstrap: 25",
        "debootstrap: 50",
    ], said  # Release files are not packages; one line per 25, not per package
    assert any("Installing core packages" in s for s in said)
    assert any("Configuring the base system" in s for s in said)
    assert not any("libc6" in s for s in said)
    assert said[-1].startswith("built leaflab-sandbox:t")


def test_a_failed_build_says_why_with_the_end_of_its_output(tmp_path: Path) -> None:
    script = _script(tmp_path, 'echo "E: Couldn\'t download packages: libc6" >&2\nexit 3\n')
    with pytest.raises(SandboxUnavailable, match=r"exit 3.*Couldn't download packages"):
        run_build_script(script, "leaflab-sandbox:t", tmp_path / "rootfs", say=lambda _: None)


def test_an_unreachable_registry_is_recognised_and_other_errors_are_not() -> None:
    assert registry_unreachable(docker.errors.APIError(DOCKER_DNS_ERROR))
    assert not registry_unreachable(docker.errors.BuildError("COPY failed: no such file", []))


def test_leaflab_up_shows_the_build_lines(capsys: pytest.CaptureFixture[str]) -> None:
    with build_progress_shown():
        logging.getLogger("services.sandbox.image").info("debootstrap: 25 Debian packages")
    logging.getLogger("services.sandbox.image").info("after: not shown")
    out = capsys.readouterr().out
    assert "sandbox: debootstrap: 25 Debian packages" in out and "after" not in out
