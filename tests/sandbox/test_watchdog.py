"""The Docker backend's one watchdog thread: every watched exec is killed at its
deadline or when its disk poll says so, never after it was stopped, and one thread
watches them all (no thread per exec)."""

from __future__ import annotations

import threading
import time

from services.sandbox.backends.docker.watchdog import Watchdog


class Kills:
    def __init__(self) -> None:
        self.reasons: list[tuple[str, str, float]] = []
        self.lock = threading.Lock()

    def of(self, name: str):  # type: ignore[no-untyped-def]
        def kill(reason: str) -> None:
            with self.lock:
                self.reasons.append((name, reason, time.monotonic()))

        return kill

    def names(self) -> list[str]:
        with self.lock:
            return [name for name, _reason, _at in self.reasons]


def never() -> str | None:
    return None


def wait_until(predicate, timeout: float = 3.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.005)


class TestDeadlines:
    def test_each_exec_is_killed_for_timeout_at_its_own_deadline_in_order(self) -> None:
        dog, kills = Watchdog(), Kills()
        started = time.monotonic()
        for name, timeout in (("late", 0.30), ("early", 0.05), ("middle", 0.15)):
            dog.watch(timeout_s=timeout, poll=never, poll_every_s=10, kill=kills.of(name))
        wait_until(lambda: len(kills.reasons) == 3)
        dog.close()
        assert kills.names() == ["early", "middle", "late"]
        assert {reason for _n, reason, _a in kills.reasons} == {"timeout"}
        late_at = kills.reasons[-1][2] - started
        assert 0.30 <= late_at < 0.30 + 0.15, late_at  # at the deadline, not a poll later

    def test_a_stopped_exec_is_never_killed(self) -> None:
        dog, kills = Watchdog(), Kills()
        watch = dog.watch(timeout_s=0.05, poll=never, poll_every_s=0.01, kill=kills.of("done"))
        watch.stop()
        other = dog.watch(timeout_s=0.1, poll=never, poll_every_s=10, kill=kills.of("other"))
        wait_until(lambda: kills.names() == ["other"])
        time.sleep(0.1)
        dog.close()
        assert kills.names() == ["other"]
        assert other.stopped

    def test_one_thread_watches_many_execs(self) -> None:
        dog, kills = Watchdog(name="watchdog-under-test"), Kills()
        watches = [
            dog.watch(timeout_s=5, poll=never, poll_every_s=10, kill=kills.of(str(i)))
            for i in range(50)
        ]
        named = [t for t in threading.enumerate() if t.name == "watchdog-under-test"]
        assert len(named) == 1
        for watch in watches:
            watch.stop()
        dog.close()
        assert kills.names() == []


class TestDiskPolls:
    def test_a_poll_that_reports_a_reason_kills_with_it(self) -> None:
        dog, kills = Watchdog(), Kills()
        polls: list[float] = []

        def poll() -> str | None:
            polls.append(time.monotonic())
            return "workspace_quota" if len(polls) >= 3 else None

        dog.watch(timeout_s=10, poll=poll, poll_every_s=0.05, kill=kills.of("filler"))
        wait_until(lambda: bool(kills.reasons))
        dog.close()
        assert [(n, r) for n, r, _a in kills.reasons] == [("filler", "workspace_quota")]
        assert len(polls) == 3
        assert polls[2] - polls[0] >= 0.09  # once per period, not in a loop

    def test_stop_waits_for_a_check_underway_and_nothing_follows_it(self) -> None:
        dog, kills = Watchdog(), Kills()
        polling = threading.Event()

        def slow_poll() -> str | None:
            polling.set()
            time.sleep(0.2)
            return "workspace_quota"

        watch = dog.watch(timeout_s=10, poll=slow_poll, poll_every_s=0.01, kill=kills.of("x"))
        assert polling.wait(2)
        watch.stop()  # returns once the check is over: its kill is already recorded
        seen = kills.names()
        time.sleep(0.1)
        dog.close()
        assert seen == ["x"] and kills.names() == ["x"]

    def test_a_failing_poll_leaves_the_deadline_in_force(self) -> None:
        dog, kills = Watchdog(), Kills()

        def broken() -> str | None:
            raise OSError("workspace vanished")

        dog.watch(timeout_s=0.2, poll=broken, poll_every_s=0.02, kill=kills.of("x"))
        wait_until(lambda: bool(kills.reasons))
        dog.close()
        assert [(n, r) for n, r, _a in kills.reasons] == [("x", "timeout")]
