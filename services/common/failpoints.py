"""Failpoints: named places where a test makes a process die, fail or stall.

The idea of FoundationDB's buggify and fail-rs: crash-recovery code is only
trusted once a real process has been stopped at each boundary it claims to
survive. A process reads ``LEAFLAB_FAILPOINTS`` once, at import::

    LEAFLAB_FAILPOINTS="tool.after_effect=kill@2;model.before_record=sleep(500)"

Actions: ``kill`` (SIGKILL this process, as a crash or the OOM killer would),
``stop`` (SIGSTOP this process — every thread freezes, as in a long GC pause
or a VM stall — until someone sends SIGCONT), ``raise`` (a
:class:`FailpointError`), ``sleep(MS)`` (this thread only). ``name=action@N`` fires
only on the Nth hit of that point in this process (counting from 1). With the
variable unset :func:`failpoint` returns after one truth test of an empty dict.

Points placed in the agent worker (``services/worker/spine`` and ``runtime``), one at each
ledger boundary:

- ``model.before_record`` / ``model.after_record``: a model reply has arrived /
  its ledger step and assistant message are written.
- ``tool.before_effect`` / ``tool.after_effect``: a tool call is about to run
  / has run, its outcome not yet recorded. For a file edit, ``before_effect``
  comes before the fence check that guards applying it.
- ``edit.before_hash_record`` / ``edit.after_hash_record``: a file edit's
  intended post-state hash is about to be / has been recorded (the edit not
  yet applied).
- ``job.before_finish`` / ``job.after_finish``: the terminal status is about
  to be / has been committed (events and wake-ups not yet sent).
- ``survey.after_note``: a survey paper's note step has been written (other
  notes of the read stage may still be in flight).
- ``context.after_summary``: a rolling context summary's ledger step has been
  written (the model call that uses it not yet made).
- ``subagent.after_spawn``: a subagent's child job and the parent's waiting
  step are committed (the child's advance message not yet sent).
- ``approval.after_request``: an approval row and ``waiting_approval`` are
  committed (its event not yet published).

In the library service: ``library.import.after_entry``: one entry of a
bibliography import is settled and committed (the next not yet begun).
"""

from __future__ import annotations

import logging
import os
import re
import signal
import threading
import time
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

log = logging.getLogger(__name__)

ENV_VAR: Final = "LEAFLAB_FAILPOINTS"
_SPEC = re.compile(r"^(?P<action>kill|stop|raise|sleep\((?P<ms>\d+)\))(?:@(?P<nth>[1-9]\d*))?$")


class FailpointError(RuntimeError):
    """Raised by a failpoint whose action is ``raise``."""


@dataclass
class _Action:
    kind: str  # "kill" | "stop" | "raise" | "sleep"
    sleep_ms: int = 0
    nth: int | None = None
    hits: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def due(self) -> bool:
        with self.lock:
            self.hits += 1
            return self.nth is None or self.hits == self.nth


def parse(spec: str) -> MappingProxyType[str, _Action]:
    """``name=action[@N];…`` as a read-only mapping; ValueError names the bad entry."""
    actions: dict[str, _Action] = {}
    for entry in filter(None, (part.strip() for part in spec.split(";"))):
        name, sep, action = (s.strip() for s in entry.partition("="))
        match = _SPEC.match(action)
        if not sep or not name or match is None:
            raise ValueError(
                f"{ENV_VAR}: cannot read {entry!r}; write name=kill|stop|raise|sleep(MS)[@N]"
            )
        kind = "sleep" if match["ms"] is not None else match["action"]
        nth = int(match["nth"]) if match["nth"] else None
        actions[name] = _Action(kind=kind, sleep_ms=int(match["ms"] or 0), nth=nth)
    return MappingProxyType(actions)


_active: MappingProxyType[str, _Action] = parse(os.environ.get(ENV_VAR, ""))


def configure(spec: str | None) -> None:
    """Replace the active failpoints (tests in this process); None or "" turns all off."""
    global _active
    _active = parse(spec or "")


def failpoint(name: str) -> None:
    """Fire the action configured for ``name``, if any (nothing when none are set)."""
    if not _active:
        return
    action = _active.get(name)
    if action is None or not action.due():
        return
    log.warning("failpoint %s fired: %s", name, action.kind)
    if action.kind == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif action.kind == "stop":
        os.kill(os.getpid(), signal.SIGSTOP)
    elif action.kind == "raise":
        raise FailpointError(f"failpoint {name}")
    else:
        time.sleep(action.sleep_ms / 1000)
