"""`leaflab up` stops its processes in dependency order, each out of reach of terminal signals.

The specs are the ones `leaflab up` builds (names, tiers, stop signals and
timeouts); each program is swapped for a small recorder that notes when it is
asked to stop and when it exits, so the order is observed, not assumed.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from pathlib import Path

from services.cli.up.embedded import redis_spec
from services.cli.up.ports import StackPorts, free_port
from services.cli.up.stack import service_specs
from services.cli.up.supervisor import ProcessSpec, Supervisor
from services.common.settings import CommonSettings

RECORDER = """
import signal, sys, time
name, path = sys.argv[1], sys.argv[2]
def stop(signum, frame):
    with open(path, "a") as f:
        f.write(name + " signalled\\n")
    time.sleep(0.3)  # a clean stop takes a moment; the next tier must wait for it
    with open(path, "a") as f:
        f.write(name + " exited\\n")
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
open(path + "." + name, "w").close()
while True:
    time.sleep(0.05)
"""


def _stack_specs(home: Path) -> list[ProcessSpec]:
    ports = StackPorts(api=free_port(), library=free_port(), model_sim=free_port())
    specs = service_specs(
        host="127.0.0.1",
        ports=ports,
        workers=2,
        model_sim="-",
        settings=CommonSettings(),
    )
    store, _ = redis_spec(home)
    return [store, *specs]


def test_stop_goes_workers_model_library_api_then_stores(tmp_path: Path) -> None:
    journal = tmp_path / "journal"
    specs = [
        dataclasses.replace(s, argv=[sys.executable, "-c", RECORDER, s.name, str(journal)])
        for s in _stack_specs(tmp_path / "home")
    ]
    supervisor = Supervisor(tmp_path / "logs", base_env={})
    try:
        for spec in specs:
            supervisor.add(spec)
        deadline = time.monotonic() + 30
        while not all(Path(f"{journal}.{s.name}").exists() for s in specs):
            assert time.monotonic() < deadline, "recorders did not start"
            time.sleep(0.05)
        # Out of reach of the terminal: a hangup or Ctrl-C reaches the supervisor only.
        for pid in supervisor.pids().values():
            assert os.getsid(pid) != os.getsid(0)
            assert os.getpgid(pid) != os.getpgrp()
    finally:
        supervisor.stop()
    lines = journal.read_text().splitlines()
    order = ["worker-1", "worker-2", "model-sim", "library", "api", "redis"]
    assert sorted(line.split()[0] for line in lines) == sorted(order * 2), lines
    signalled = {line.split()[0]: i for i, line in enumerate(lines) if line.endswith("signalled")}
    exited = {line.split()[0]: i for i, line in enumerate(lines) if line.endswith("exited")}
    stages = [["worker-1", "worker-2"], ["model-sim"], ["library"], ["api"], ["redis"]]
    for before, after in zip(stages, stages[1:], strict=False):
        # Everything of the earlier stage exited before the next stage was asked to stop.
        assert max(exited[n] for n in before) < min(signalled[n] for n in after), lines
    # Workers of one tier stop in parallel: both asked before either exited.
    assert max(signalled["worker-1"], signalled["worker-2"]) < min(
        exited["worker-1"], exited["worker-2"]
    ), lines
