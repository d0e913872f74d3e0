"""Closing the terminal of `leaflab up` mid-job: an orderly stop, and the job resumes.

The terminal's hangup reaches the whole foreground process group at once. The
stack must still stop in dependency order (the workers hand their jobs back while
the model endpoint and the stores are up), and the next `leaflab up` continues the
job where it stopped: never failed, no step done twice.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import signal
import subprocess
import termios
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from tests.cli.up_harness import (
    LEAFLAB,
    READY,
    UpStack,
    descendants,
    kill_group,
    new_home,
    processes_of,
    remove,
    start_up,
    up_env,
    wait_until_gone,
)
from tests.fixtures.processes import free_port

ANSWER = "the answer after the restart"
SLOW_CALL_MS = 10_000


def _script(home: Path) -> Path:
    """A slow first call (a tool call), then the answer; the simulator picks the reply
    by the conversation's assistant turns, so a restarted one carries on."""
    path = home.parent / "script.json"
    replies = [
        {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}], "delay_ms": SLOW_CALL_MS},
        {"content": ANSWER},
    ]
    path.write_text(json.dumps({"replies": replies}))
    return path


def _get(stack: UpStack, path: str) -> dict[str, Any]:
    resp = httpx.get(
        f"{stack.url}{path}", headers={"Authorization": f"Bearer {stack.key()}"}, timeout=10
    )
    resp.raise_for_status()
    return dict(resp.json())


def _wait_status(stack: UpStack, job_id: str, wanted: set[str], timeout_s: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    job = _get(stack, f"/v1/jobs/{job_id}")
    while job["status"] not in wanted and time.monotonic() < deadline:
        time.sleep(0.3)
        job = _get(stack, f"/v1/jobs/{job_id}")
    return job


class TestUpStop:
    def test_sighup_to_the_group_mid_call_stops_in_order_and_the_next_up_resumes(
        self,
    ) -> None:
        home = new_home()
        api_port = free_port()
        home.parent.mkdir(parents=True, exist_ok=True)
        script = str(_script(home))
        stack = start_up(home, api_port, model_sim=script)
        try:
            submitted = stack.cli("submit", "list the files")
            assert submitted.returncode == 0, submitted.stdout + submitted.stderr
            job_id = submitted.stdout.strip()
            job = _wait_status(stack, job_id, {"running"}, timeout_s=30)
            assert job["status"] == "running", job
            time.sleep(2)  # the slow model call is in flight

            record = stack.record()
            tree = descendants(stack.proc.pid)
            # Closing the terminal: SIGHUP to the foreground process group.
            os.killpg(stack.proc.pid, signal.SIGHUP)
            # The wait's own deadline bounds the stop (no clock assert to fail under load).
            code = stack.proc.wait(timeout=75)
        finally:
            kill_group(stack)
        out = stack.text()
        assert code == 0 and "stopped" in out, out[-3000:]
        left, taken = wait_until_gone(home, list(record["ports"].values()), tree, timeout_s=30)
        assert left == [] and taken == [], (left, taken)
        logs = home / "logs"
        for name in ("worker-1", "sandbox-worker"):
            log_file = logs / f"{name}.log"
            if log_file.exists():
                text = log_file.read_text(errors="replace")
                assert "Restarting celery worker" not in text, text[-3000:]
                assert "ImportError" not in text, text[-3000:]
        worker_log = (logs / "worker-1.log").read_text(errors="replace")
        assert "Warm shutdown" in worker_log, worker_log[-3000:]

        restarted_at = datetime.now().astimezone()
        stack = start_up(home, api_port, model_sim=script)
        try:
            job = _wait_status(stack, job_id, {"succeeded", "failed", "cancelled"}, 60)
            assert job["status"] == "succeeded", (job, (logs / "worker-1.log").read_text()[-3000:])
            assert job["result"]["content"] == ANSWER
            steps = _get(stack, f"/v1/jobs/{job_id}/steps")["items"]
            llm = [s for s in steps if s["kind"] == "llm"]
            # The slow call finished and was recorded by the stopping stack (the model
            # endpoint outlived the worker); the next stack made only the second call.
            assert [s["status"] for s in llm] == ["succeeded", "succeeded"], llm
            assert all(s["executions"] == 1 for s in steps), steps
            first_done = datetime.fromisoformat(llm[0]["finished_at"])
            assert first_done < restarted_at, (first_done, restarted_at)
        finally:
            stack.proc.send_signal(signal.SIGTERM)
            stack.proc.wait(timeout=90)
            kill_group(stack)
            remove(home)


def _own_terminal() -> None:
    # Popen made us a session leader (start_new_session): take the pty on stdin
    # as the controlling terminal, as a shell's job on a terminal has it.
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class TestUpTerminal:
    def test_closing_its_terminal_stops_the_stack_cleanly(self) -> None:
        """The terminal itself goes away: SIGHUP from the kernel, and every later write
        to the terminal fails (EIO); the clean stop must still run to its end."""
        home = new_home()
        api_port = free_port()
        master, slave = pty.openpty()
        proc = subprocess.Popen(
            [*LEAFLAB, "up", "--port", str(api_port), "--model-sim"],
            env=up_env(home, api_port),
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            preexec_fn=_own_terminal,
        )
        os.close(slave)
        seen = b""
        try:
            deadline = time.monotonic() + 300
            while READY.encode() not in seen:
                assert time.monotonic() < deadline and proc.poll() is None, seen[-3000:]
                if select.select([master], [], [], 0.5)[0]:
                    seen += os.read(master, 65536)
            tree = descendants(proc.pid)
            ports = list(json.loads((home / "stack.json").read_text())["ports"].values())
            os.close(master)  # the terminal window is closed
            # The wait's own deadline bounds the stop (no clock assert to fail under load).
            code = proc.wait(timeout=75)
        finally:
            with_stack = UpStack(home, api_port, proc, home.parent / "none")
            kill_group(with_stack)
        assert code == 0, seen[-3000:]
        left, taken = wait_until_gone(home, ports, tree, timeout_s=30)
        assert left == [] and taken == [], (left, taken, processes_of(home))
        # The workers were stopped by the supervisor (a warm shutdown), not killed
        # by the parent-death signal of a supervisor that died on its way out.
        worker_log = (home / "logs" / "worker-1.log").read_text(errors="replace")
        assert "Warm shutdown" in worker_log, worker_log[-3000:]
        remove(home)
