"""The offline sandbox image build (``deploy/sandbox/build_offline.sh``), with progress.

The build takes minutes (debootstrap of a Debian root, pip inside it, ``docker
import``); run silent, a first ``leaflab up`` looked hung. Its phases and a running
count of the Debian packages fetched are logged as they happen (``leaflab up``
shows this logger's lines), and a registry that cannot be reached is said in
words instead of Docker's raw DNS error.
"""

from __future__ import annotations

import logging
import re
import subprocess
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

from services.sandbox.backends.base import SandboxUnavailable

log = logging.getLogger("services.sandbox.image")

BUILD_TIMEOUT_S = 1800
USUAL_MINUTES = "5-10 minutes on 2 cores"
# What Docker says when no registry answers (DNS, TCP, TLS), in its own words.
UNREACHABLE = re.compile(
    r"no such host|dial tcp|i/o timeout|connection refused|network is unreachable|"
    r"TLS handshake timeout|Temporary failure in name resolution|server misbehaving",
    re.IGNORECASE,
)
RETRIEVING = re.compile(r"^I: Retrieving (?!Release|InRelease|Packages)(\S+)")
PACKAGES_PER_LINE = 25


def registry_unreachable(error: Exception) -> bool:
    """Whether a Dockerfile build failed because no image registry can be reached."""
    return UNREACHABLE.search(str(error)) is not None


def unreachable_notice() -> str:
    return (
        "no image registry is reachable; building the sandbox image from Debian "
        f"packages instead (debootstrap, usually {USUAL_MINUTES}; once per machine)"
    )


class BuildProgress:
    """Turns the build script's stderr into a few lines a person can follow."""

    def __init__(self, say: Callable[[str], None], started: float) -> None:
        self.say, self.started, self.packages = say, started, 0

    def line(self, text: str) -> None:
        text = text.rstrip()
        if text.startswith("build_offline: "):
            self.say(f"{text.removeprefix('build_offline: ')} ({self.elapsed()})")
        elif RETRIEVING.match(text):
            self.packages += 1
            if self.packages % PACKAGES_PER_LINE == 0:
                self.say(f"debootstrap: {self.packages} Debian packages fetched ({self.elapsed()})")
        elif text.startswith(("I: Installing core", "I: Unpacking the base", "I: Configuring")):
            if text.startswith("I: Configuring") and "base system" not in text:
                return  # one line per package otherwise
            self.say(f"debootstrap: {text.removeprefix('I: ')} ({self.elapsed()})")

    def elapsed(self) -> str:
        seconds = int(time.monotonic() - self.started)
        return f"{seconds // 60}m{seconds % 60:02d}s"


def run_build_script(
    script: Path, tag: str, rootfs: Path, *, say: Callable[[str], None] = log.info
) -> None:
    """Run the offline recipe; its progress goes to ``say``; raises SandboxUnavailable
    with the end of its output when it fails."""
    say(f"building {tag} offline from Debian packages (usually {USUAL_MINUTES})")
    rootfs.parent.mkdir(parents=True, exist_ok=True)
    progress = BuildProgress(say, time.monotonic())
    tail: deque[str] = deque(maxlen=40)
    with subprocess.Popen(
        [str(script), tag, str(rootfs)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
    ) as proc:
        assert proc.stderr is not None
        deadline = time.monotonic() + BUILD_TIMEOUT_S
        for line in proc.stderr:
            tail.append(line)
            progress.line(line)
            if time.monotonic() > deadline:
                proc.kill()
                raise SandboxUnavailable(
                    f"offline sandbox image build took over {BUILD_TIMEOUT_S} s"
                )
        code = proc.wait()
    if code != 0:
        raise SandboxUnavailable(
            f"offline sandbox image build failed (exit {code}): {''.join(tail)[-2000:]}"
        )
    say(f"built {tag} ({progress.elapsed()})")
