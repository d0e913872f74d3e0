"""A Celery worker that takes SIGHUP as a stop (SIGTERM's handler), never as a re-exec.

Detached from a terminal, Celery's worker answers SIGHUP by re-executing itself
(``execv(sys.executable, [sys.executable] + sys.argv)``). Started as ``python -m
celery`` (as `leaflab up` and the deployment roles start it) that re-exec runs
celery's ``__main__.py`` as a script and dies with "attempted relative import with
no known parent package"; either way the threads of running tasks are dropped
without handing their jobs back. A hangup (a closed terminal, a process manager
stopping the service) means "stop", so it gets the same warm shutdown as SIGTERM:
stop consuming, let running jobs reach a step boundary and release their leases.

Imported only by a worker that starts (``LeaflabCelery.Worker``), not by every
client of the Celery app.
"""

from __future__ import annotations

from typing import Any

from celery.apps.worker import Worker, install_worker_term_handler


class HangupStopsWorker(Worker):
    def install_platform_tweaks(self, worker: Any) -> None:
        super().install_platform_tweaks(worker)
        # After Celery's own handlers, so this one replaces the restart handler.
        install_worker_term_handler(worker, sig="SIGHUP")
