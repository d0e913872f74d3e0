"""The up benchmark's CPU per role: processes are told apart by their command line,
and a busy process under the stack's root is counted in its role."""

from __future__ import annotations

import subprocess
import sys
import time

from bench.stack_cpu import OTHER, SIMULATOR, leaflab_cpu_s, role_of, stack_ledger


def test_roles_follow_the_command_line() -> None:
    assert role_of([sys.executable, "-m", "celery", "-A", "services.worker.app:app"]) == (
        "agent workers"
    )
    assert role_of(["python", "-m", "uvicorn", "services.api.app:create_app"]) == "api"
    assert role_of(["postgres: postgres postgres [local] idle"]) == "postgres"
    assert role_of(["python", "-m", "services.model_sim", "--port", "1"]) == SIMULATOR
    assert role_of(["leaflab", "up"]) == OTHER


def test_a_busy_child_of_the_root_is_counted_and_the_simulator_is_left_out() -> None:
    # A parent whose child burns ~0.3 s of CPU: the child is found through the tree.
    burn = "import time\nt=time.process_time()\nwhile time.process_time()-t<0.3: pass"
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import subprocess,sys; subprocess.run([sys.executable,'-c',{burn!r}])",
        ]
    )
    ledger = stack_ledger(parent.pid, sample_s=0.05)
    ledger.start()
    parent.wait(timeout=30)
    time.sleep(0.05)
    used = ledger.stop()
    assert used[OTHER] >= 0.2, used
    assert leaflab_cpu_s({**used, SIMULATOR: 5.0}) == leaflab_cpu_s(used)
