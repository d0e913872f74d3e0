"""Long-lived runner inside a warm sandbox container (standard library only).

The Docker backend starts every warm container with this script as its main
process (under tini) and keeps the container's stdin/stdout attached. Each
request is one JSON line on stdin; the runner answers with binary frames on
stdout, so one exec costs a pipe round trip instead of a ``docker exec``:

    frame = kind (1 byte) + payload length (4 bytes, big endian) + payload
    R ready {"pid"}  S started {"pid", "forked"}  O stdout bytes  E stderr bytes
    X exit {"exit_code", "clean", "oom_killed"}  F failed {"error"} (nothing was started)

Every request runs in a fresh child process with its own pipes; before and
after it, every other process in the container is killed, so nothing of one
run outlives it. A ``python3 -c CODE`` request with ``"fork": true`` is a fork
of the runner (which never runs request code itself, so each fork starts from
the same clean interpreter) instead of a new interpreter: no start-up cost.
The container's limits (pids, memory, CPU, fsize ulimit, read-only root, no
capabilities) apply to the children as before. The hard
wall-clock timeout and the output limit stay with the host, which kills the
whole container; the runner only streams.

The runner is the container's PID 1 (no tini: tini would hold the attached
stdio where same-uid code could open it through /proc/1/fd). So the runner
reaps orphans itself, and the kernel drops signals from inside the container
that PID 1 has no handler for: code cannot SIGKILL it. It also makes itself
non-dumpable, so its own /proc/<pid>/fd cannot be opened to forge or steal
frames.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import selectors
import signal
import struct
import subprocess
import sys
import time
from typing import Any

HEADER = struct.Struct(">cI")
READY, STARTED, OUT, ERR, EXIT, FAILED = b"R", b"S", b"O", b"E", b"X", b"F"
CHUNK = 64 * 1024
MAX_REQUEST = 16 * 1024 * 1024  # the host never sends more (1 MB of code, JSON-escaped)
SWEEP_ROUNDS = 200
PR_SET_DUMPABLE = 4
IDLE_REAP_S = 2.0
# The container's own OOM-kill counter, as the kernel keeps it (cgroup v2, then v1).
OOM_COUNTERS = ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control")


def frame(kind: bytes, payload: bytes) -> bytes:
    return HEADER.pack(kind, len(payload)) + payload


def _set_dumpable(value: int) -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, value, 0, 0, 0)
    except (OSError, AttributeError, ImportError):
        pass  # best effort: the container is still the wall


class Channel:
    """The protocol ends: private duplicates of fds 0 and 1 (never inherited)."""

    def __init__(self) -> None:
        self.inp = os.dup(0)
        self.out = os.dup(1)
        devnull = os.open(os.devnull, os.O_RDWR)
        # Stray prints (or a traceback) of the runner must not corrupt the stream.
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        os.close(devnull)
        self._buf = bytearray()

    def send(self, kind: bytes, payload: bytes | dict[str, Any]) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        view = memoryview(frame(kind, data))
        while view:
            view = view[os.write(self.out, view) :]

    def read_line(self) -> bytes | None:
        scanned = 0
        while (end := self._buf.find(b"\n", scanned)) < 0:
            scanned = len(self._buf)
            if scanned > MAX_REQUEST:
                # A protocol violation: give up (the container goes with it).
                raise SystemExit("sandbox_runner: request too large")
            if not select.select([self.inp], [], [], IDLE_REAP_S)[0]:
                reap()  # e.g. orphans of a fallback `docker exec`
                continue
            chunk = os.read(self.inp, CHUNK)
            if not chunk:
                return None
            self._buf += chunk
        line = bytes(self._buf[:end])
        del self._buf[: end + 1]
        return line


def reap(child: int = -1) -> int | None:
    """Collect every exited process (PID 1's duty); returns ``child``'s exit code if seen."""
    status: int | None = None
    while True:
        try:
            pid, raw = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return status
        if pid == 0:
            return status
        if pid == child:
            status = os.waitstatus_to_exitcode(raw)


def wait_for(child: int) -> int:
    """Block until ``child`` exits (PEP 475 retries an interrupted wait); its exit code."""
    return os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except (OSError, IndexError):
        return True  # gone


def sweep() -> bool:
    """Kill every process but PID 1 (tini) and this runner; True once none is left."""
    me = os.getpid()
    for _ in range(SWEEP_ROUNDS):
        others = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, me)]
        alive = [p for p in others if not _is_zombie(p)]
        if not alive:
            reap()
            return True
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.002)
        reap()
    return False


def _child_setup() -> None:
    # The runner ignores SIGINT (as PID 1 it would be the one signal code could
    # hurt it with); the child gets the usual default back.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    # A memory balloon should take the child down, never the runner.
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass


def _env(req: dict[str, Any]) -> dict[str, str]:
    return {**os.environ, **{str(k): str(v) for k, v in dict(req.get("env") or {}).items()}}


def spawn(req: dict[str, Any]) -> tuple[int, int, int, Any]:
    """Start ``argv`` with fresh pipes; returns (pid, stdout fd, stderr fd, keep-alive)."""
    proc = subprocess.Popen(
        [str(a) for a in req["argv"]],
        cwd=str(req.get("cwd") or "/"),
        env=_env(req),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        close_fds=True,
        start_new_session=True,
        umask=int(req.get("umask", 0o022)),
        preexec_fn=_child_setup,  # noqa: PLW1509 - the runner is single-threaded
    )
    assert proc.stdout is not None and proc.stderr is not None
    # The runner reaps (it is PID 1): Popen must never wait for this child itself.
    proc.returncode = 0
    return proc.pid, os.dup(proc.stdout.fileno()), os.dup(proc.stderr.fileno()), proc


def python_code(argv: list[Any]) -> str | None:
    """The code of a plain ``python3 -c CODE`` request, which can be forked instead."""
    if len(argv) == 3 and argv[0] == "python3" and argv[1] == "-c":
        return str(argv[2])
    return None


def fork_python(code: str, req: dict[str, Any]) -> tuple[int, int, int, Any]:
    """``python3 -c CODE`` without an interpreter start: a fork of this pristine runner.

    The runner never runs request code itself, so every fork starts from the
    same clean state; the child exits with ``os._exit`` and never returns here.
    """
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the forked child
        status = 70
        try:
            _enter_child(req, out_w, err_w)
            status = _run_main(code)
        finally:
            os._exit(status)
    os.close(out_w)
    os.close(err_w)
    return pid, out_r, err_r, None


def _enter_child(req: dict[str, Any], out_w: int, err_w: int) -> None:
    os.setsid()
    _child_setup()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    _set_dumpable(1)  # the code's own process, as after an exec
    devnull = os.open(os.devnull, os.O_RDONLY)
    for fd, target in ((devnull, 0), (out_w, 1), (err_w, 2)):
        os.dup2(fd, target)
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))  # the protocol fds above all
    os.umask(int(req.get("umask", 0o022)))
    os.chdir(str(req.get("cwd") or "/"))
    env = _env(req)
    os.environ.clear()
    os.environ.update(env)
    # What `python3 -c` would have set up from the same environment.
    sys.dont_write_bytecode = bool(env.get("PYTHONDONTWRITEBYTECODE"))
    sys.argv[:] = ["-c"]
    sys.orig_argv[:] = ["python3", "-c"]
    sys.path.insert(0, "")


def _run_main(code: str) -> int:
    import builtins
    import importlib.machinery
    import types

    main = types.ModuleType("__main__")
    main.__dict__.update(
        __builtins__=builtins, __loader__=importlib.machinery.BuiltinImporter, __spec__=None
    )
    sys.modules["__main__"] = main
    try:
        exec(compile(code, "<string>", "exec"), main.__dict__)  # noqa: S102 - the point
        status = 0
    except SystemExit as exc:
        status = _exit_status(exc)
    except BaseException:
        etype, value, tb = sys.exc_info()
        assert etype is not None and value is not None
        # Drop this frame: the traceback starts in the code, as with `python3 -c`.
        value = value.with_traceback(tb.tb_next if tb is not None else None)
        sys.excepthook(etype, value, value.__traceback__)
        status = 130 if isinstance(value, KeyboardInterrupt) else 1
    return _finalize(status)


def _exit_status(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    sys.stderr.write(f"{exc.code}\n")
    return 1


def _finalize(status: int) -> int:
    """Interpreter shutdown as Python does it: threads, atexit, then flush stdio."""
    import atexit
    import threading

    with contextlib.suppress(BaseException):  # shutdown must go on
        threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - Python exits 120 when flushing fails
            status = status or 120
    return status


def pump(chan: Channel, pid: int, out_fd: int, err_fd: int) -> tuple[int, bool]:
    """Forward the child's output until it exits and its pipes close.

    Returns the exit code and whether every leftover process was killed.
    """
    sel = selectors.DefaultSelector()
    sel.register(out_fd, selectors.EVENT_READ, OUT)
    sel.register(err_fd, selectors.EVENT_READ, ERR)
    code: int | None = None
    clean = True
    while sel.get_map() or code is None:
        for key, _ in sel.select(timeout=0.05) if sel.get_map() else ():
            data = os.read(key.fd, CHUNK)
            if data:
                chan.send(key.data, data)
            else:
                sel.unregister(key.fd)
        if code is None:
            code = reap(pid)
            if code is None and not sel.get_map():
                # Its output is closed: it is exiting (a process's files close just
                # before it can be reaped) or runs on silently. Wait for it rather than
                # poll (a poll's sleep was most of a short run's exit); the host's
                # watchdog still bounds the wait by killing the container.
                code = wait_for(pid)
            if code is not None:
                # The run is over: background jobs it left die now, which also
                # closes the pipes they hold, so the loop ends.
                clean = sweep()
    sel.close()
    os.close(out_fd)
    os.close(err_fd)
    return code, clean


def oom_kills() -> int | None:
    """How many processes the OOM killer ended in this container; None if not visible."""
    for path in OOM_COUNTERS:
        try:
            with open(path) as f:
                for line in f:
                    name, _, value = line.partition(" ")
                    if name == "oom_kill":
                        return int(value)
        except (OSError, ValueError):
            continue
    return None


def exit_code(returncode: int) -> int:
    """Shell convention, as ``docker exec`` reports it: 128 + signal when killed."""
    return 128 - returncode if returncode < 0 else returncode


def serve(chan: Channel, req: dict[str, Any]) -> None:
    if not sweep():
        chan.send(FAILED, {"error": "could not clear leftover processes"})
        return
    code = python_code(req["argv"]) if req.get("fork") else None
    ooms_before = oom_kills()
    try:
        pid, out_fd, err_fd, keep = fork_python(code, req) if code is not None else spawn(req)
    except OSError as exc:
        # Like a shell: a missing program is exit 127 with a message, not a failure.
        chan.send(STARTED, {"pid": 0})
        chan.send(ERR, f"sandbox: {req['argv'][0]}: {exc.strerror}\n".encode())
        chan.send(EXIT, {"exit_code": 127, "clean": True})
        return
    chan.send(STARTED, {"pid": pid, "forked": code is not None})
    status, clean = pump(chan, pid, out_fd, err_fd)
    del keep  # Popen's own pipe objects may close now
    ooms_after = oom_kills()
    oom = ooms_before is not None and ooms_after is not None and ooms_after > ooms_before
    chan.send(EXIT, {"exit_code": exit_code(status), "clean": clean, "oom_killed": oom})


def main() -> int:
    if os.getpid() != 1:
        # The sweep kills every process it can see: only safe as the PID 1 of
        # a container's own PID namespace, never on a host.
        sys.stderr.write("sandbox_runner: refusing to run outside a container (not PID 1)\n")
        return 2
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _set_dumpable(0)
    chan = Channel()
    chan.send(READY, {"pid": os.getpid()})
    while True:
        line = chan.read_line()
        if line is None:
            # The host let go of stdin. Stay up as the container's keeper (and
            # reaper) so a `docker exec` fallback still works; the host kills
            # the container when it is done with it.
            while True:
                time.sleep(IDLE_REAP_S)
                reap()
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            if not isinstance(req, dict) or not isinstance(req.get("argv"), list):
                raise ValueError("request needs an argv list")
        except ValueError as exc:
            chan.send(FAILED, {"error": f"bad request: {exc}"})
            continue
        try:
            serve(chan, req)
        except Exception as exc:  # noqa: BLE001 - report, keep serving
            chan.send(FAILED, {"error": repr(exc)})


if __name__ == "__main__":
    sys.exit(main())
