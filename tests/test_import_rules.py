"""The layering rules of ``services/``, checked on the source with ``ast``.

- a service (api, worker, sandbox, library) imports only itself and ``common``;
- ``common`` imports no other part of the tree;
- no import cycle inside a part (deferred imports in functions count);
- Celery task and queue names are spelled only in ``services/common/contracts/tasks.py``,
  and only its typed senders call ``send_task`` (a message is spelled once);
- no module is over 400 lines;
- a job's terminal statuses are spelled as a set only in ``services/common/contracts/``
  (Python collections, SQL text and the pages' JS arrays; ``tests/fixtures/status_literals.py``);
- Redis key and stream names (``leaflab:…``) are spelled only in
  ``services/common/contracts/keys.py`` (``tests/fixtures/redis_key_literals.py``);
- clients (the CLI, the model simulator) use a service only through the small
  operator entry points listed in ``CLIENT_ENTRY_POINTS``.

Each rule also runs on a tiny synthetic tree that breaks it (``TestRulesCanFail``),
so a checker that silently stopped seeing anything would turn the suite red.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.import_graph import (
    TASK_NAMES_MODULE,
    Module,
    celery_name_literals,
    celery_names,
    client_imports,
    common_importing_services,
    cross_service_imports,
    import_cycles,
    load_tree,
    oversized_modules,
    send_task_calls,
)
from tests.fixtures.redis_key_literals import redis_key_literals
from tests.fixtures.source_tree import write_sources
from tests.fixtures.status_literals import terminal_sets

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 400

# Service modules a client may import: public entry points for operators, with
# no HTTP surface. Everything else a client needs goes through HTTP.
CLIENT_ENTRY_POINTS = {
    # `leaflab sandbox build-image` and `leaflab up` build or check the image the
    # sandbox worker runs and whether a backend is usable: an operator's job done
    # before any worker runs, not an API call.
    "services.sandbox.operator",
    # `leaflab library eval` runs the offline evaluation over the operator's own
    # files in a throw-away index: a local computation, not a library request.
    "services.library.operator",
    # `leaflab up` creates the first admin before any key exists to authorise an
    # HTTP call (an open "create the first admin" route would be a takeover).
    "services.api.operator",
    # `leaflab admin prices` prints the price table of this host's configuration
    # (env prices, GPU-derived prices, routed models): a local computation.
    "services.worker.operator",
}

# Modules that may spell a task name for another reason than Celery.
TASK_NAME_EXCEPTIONS = {
    # Span names: the span that times a task carries the task's name by design.
    "services.common.telemetry.names",
}


def _fail(rule: str, offenders: list[str]) -> None:
    if offenders:
        pytest.fail(f"{rule}; offenders:\n  " + "\n  ".join(offenders), pytrace=False)


@pytest.fixture(scope="module")
def tree() -> dict[str, Module]:
    return load_tree(ROOT)


def test_the_checker_sees_the_tree(tree: dict[str, Module]) -> None:
    # Guards every rule below against passing because nothing was read.
    parts = {m.part for m in tree.values()}
    assert {"api", "worker", "sandbox", "library", "common", "cli"} <= parts
    assert any(i.target.startswith("services.common") for m in tree.values() for i in m.imports)


def test_no_service_imports_another(tree: dict[str, Module]) -> None:
    _fail("a service imports another service (talk via Celery/HTTP)", cross_service_imports(tree))


def test_common_imports_no_service(tree: dict[str, Module]) -> None:
    _fail("services/common imports a service or client", common_importing_services(tree))


def test_no_import_cycle_inside_a_service(tree: dict[str, Module]) -> None:
    _fail("import cycle", import_cycles(tree))


def test_task_and_queue_names_only_in_contracts_tasks(tree: dict[str, Module]) -> None:
    tasks, queues = celery_names(tree)
    assert tasks and queues, "services/common/contracts/tasks.py defines no *_TASK / *_QUEUE names"
    offenders = celery_name_literals(
        tree, tasks=tasks, queues=queues, allowed_modules=TASK_NAME_EXCEPTIONS
    )
    _fail("task or queue name spelled outside services/common/contracts/tasks.py", offenders)


def test_messages_sent_only_through_contracts_senders(tree: dict[str, Module]) -> None:
    _fail(
        "a Celery message spelled at its call site",
        send_task_calls(tree, allowed_module=TASK_NAMES_MODULE),
    )


def test_terminal_statuses_spelled_only_in_contracts() -> None:
    _fail(
        "terminal job statuses re-declared outside services/common/contracts/", terminal_sets(ROOT)
    )


def test_redis_keys_spelled_only_in_contracts_keys() -> None:
    _fail(
        "a Redis key spelled outside services/common/contracts/keys.py (add a name there)",
        redis_key_literals(ROOT),
    )


def test_no_module_over_400_lines(tree: dict[str, Module]) -> None:
    _fail(f"module over {MAX_LINES} lines: split it", oversized_modules(tree, MAX_LINES))


def test_clients_use_only_operator_entry_points(tree: dict[str, Module]) -> None:
    _fail(
        "a client imports service internals (use HTTP or an entry point in CLIENT_ENTRY_POINTS)",
        client_imports(tree, CLIENT_ENTRY_POINTS),
    )


def _write(root: Path, files: dict[str, str]) -> dict[str, Module]:
    for rel, text in {"services/__init__.py": "", **files}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        for parent in path.relative_to(root).parents:
            init = root / parent / "__init__.py"
            if parent != Path(".") and not init.exists():
                init.write_text("")
        path.write_text(text)
    return load_tree(root)


TASK_NAMES = 'ADVANCE_TASK = "agent.advance"\nAGENT_QUEUE = "agent"\n'


class TestRulesCanFail:
    """Each checker, fed a tree that breaks its rule, names the offender."""

    def test_cross_service_import(self, tmp_path: Path) -> None:
        tree = _write(
            tmp_path,
            {
                "services/api/router.py": "from services.worker.runtime import advance\n",
                "services/worker/runtime.py": "def advance() -> None: ...\n",
                "services/library/app.py": "import services.common.db\nimport httpx\n",
                "services/common/db.py": "",
            },
        )
        assert cross_service_imports(tree) == [
            "services/api/router.py:1: api imports services.worker.runtime"
        ]

    def test_service_importing_a_client(self, tmp_path: Path) -> None:
        tree = _write(
            tmp_path,
            {
                "services/worker/app.py": "def f():\n    from services.cli import main\n",
                "services/cli/main.py": "",
            },
        )
        assert cross_service_imports(tree) == [
            "services/worker/app.py:2: worker imports services.cli.main"
        ]

    def test_common_importing_a_service(self, tmp_path: Path) -> None:
        tree = _write(
            tmp_path,
            {
                "services/common/settings.py": "from ..sandbox.settings import X\n",
                "services/sandbox/settings.py": "X = 1\n",
            },
        )
        assert common_importing_services(tree) == [
            "services/common/settings.py:1: common imports services.sandbox.settings"
        ]

    def test_cycle_through_a_deferred_import(self, tmp_path: Path) -> None:
        tree = _write(
            tmp_path,
            {
                "services/sandbox/backend.py": "def make():\n    from . import docker\n",
                "services/sandbox/docker.py": "from services.sandbox import pool\n",
                "services/sandbox/pool.py": "from services.sandbox.backend import make\n",
                "services/sandbox/output.py": "from services.sandbox.backend import make\n",
                "services/sandbox/typed.py": (
                    "from typing import TYPE_CHECKING\n"
                    "if TYPE_CHECKING:\n    from services.sandbox.hints import H\n"
                ),
                "services/sandbox/hints.py": "from services.sandbox.typed import T\n",
            },
        )
        assert import_cycles(tree) == [
            "cycle in sandbox: services.sandbox.backend -> services.sandbox.docker"
            " -> services.sandbox.pool -> services.sandbox.backend"
        ]

    def test_task_and_queue_literals(self, tmp_path: Path) -> None:
        tree = _write(
            tmp_path,
            {
                "services/common/contracts/tasks.py": TASK_NAMES,
                "services/common/routes.py": 'ROUTES = {"agent.*": {"queue": "agent"}}\n',
                "services/worker/app.py": (
                    '@app.task(name="agent.advance")\ndef advance() -> None: ...\n'
                    'celery.send_task(ADVANCE_TASK, queue="agent")\n'
                    'print("agent")  # a word, not a queue\n'
                ),
                "services/cli/up.py": (
                    "def worker_argv(app: str, queue: str) -> list[str]: ...\n"
                    'worker_argv("x:app", "agent")\n'
                ),
                "services/common/spans.py": 'SPAN = "agent.advance"\n',
            },
        )
        tasks, queues = celery_names(tree)
        assert (tasks, queues) == ({"agent.advance"}, {"agent"})
        offenders = celery_name_literals(
            tree, tasks=tasks, queues=queues, allowed_modules={"services.common.spans"}
        )
        assert offenders == [
            "services/cli/up.py:2: queue name 'agent' (worker_argv)",
            "services/common/routes.py:1: queue name 'agent'",
            "services/worker/app.py:1: task name 'agent.advance'",
            "services/worker/app.py:3: queue name 'agent'",
        ]

    def test_send_task_outside_the_senders(self, tmp_path: Path) -> None:
        tree = _write(
            tmp_path,
            {
                "services/common/contracts/tasks.py": (
                    "def send_advance(celery, job_id):\n"
                    '    celery.send_task("agent.advance", args=[job_id])\n'
                ),
                "services/api/jobs.py": (
                    "from services.common.contracts.tasks import send_advance\n"
                    "def submit(celery, job_id):\n"
                    "    send_advance(celery, job_id)\n"
                    "    celery.send_task(ADVANCE_TASK, args=[job_id])\n"
                ),
            },
        )
        assert send_task_calls(tree, allowed_module=TASK_NAMES_MODULE) == [
            "services/api/jobs.py:4: send_task (use a sender of contracts.tasks)"
        ]

    def test_oversized_module(self, tmp_path: Path) -> None:
        tree = _write(
            tmp_path,
            {"services/api/big.py": "x = 1\n" * 401, "services/api/ok.py": "x = 1\n" * 400},
        )
        assert oversized_modules(tree, 400) == ["services/api/big.py: 401 lines (limit 400)"]

    def test_client_reaching_into_a_service(self, tmp_path: Path) -> None:
        tree = _write(
            tmp_path,
            {
                "services/cli/up.py": (
                    "from services.api.admin.service import ensure_admin\n"
                    "from services.sandbox.image import ensure_image\n"
                    "from services.model_sim.server import serve\n"
                    "from services.common.settings import CommonSettings\n"
                ),
                "services/model_sim/__main__.py": "from services.cli.sim_cmd import main\n",
                "services/cli/sim_cmd.py": "",
                "services/api/admin/service.py": "",
                "services/sandbox/image.py": "",
                "services/model_sim/server.py": "",
                "services/common/settings.py": "",
            },
        )
        assert client_imports(tree, {"services.sandbox.image"}) == [
            "services/cli/up.py:1: cli imports services.api.admin.service",
            "services/model_sim/__main__.py:1: model_sim imports services.cli.sim_cmd",
        ]

    def test_terminal_status_sets(self, tmp_path: Path) -> None:
        words = '"succeeded", "failed", "cancelled"'
        static = "services/api/web/static"
        files = {
            "services/cli/watch.py": f'DONE = ({words})\nONE = ("failed",)\n',
            "services/worker/sweep.py": (
                "SQL = \"status NOT IN ('succeeded', 'failed', 'cancelled')\"\n"
            ),
            "services/common/contracts/statuses.py": f"T = {{{words}}}\n",
            f"{static}/job.js": f"const T = [{words}];\n",
            f"{static}/contracts.js": f"const T = [{words}];\n",
            f"{static}/ok.js": 'const H = { failed: "failed", cancelled: "x" };\n',
        }
        write_sources(tmp_path, files)
        assert terminal_sets(tmp_path) == [
            "services/cli/watch.py:1",
            "services/worker/sweep.py:1",
            f"{static}/job.js:1",
        ]

    def test_redis_key_literals(self, tmp_path: Path) -> None:
        files = {
            "services/common/contracts/keys.py": 'JOB = "leaflab:job:"\n',
            "services/common/events.py": (
                '"""Streams ``leaflab:job:<id>``."""\n'
                "def key(job_id):\n"
                '    return f"leaflab:job:{job_id}"\n'
            ),
            "services/worker/sweeper.py": 'LOCK = "leaflab:sweeper:lock"\n',
            "services/api/web/session.py": 'P = "leaflab:" "web:session:"\nS = f"{P}x"\n',
            "services/worker/spans.py": (
                'ATTR = "leaflab.round"\nLABEL = "leaflab.mcp.server"\n'
                'STATE = "leaflab.caller"\nNOTE = f"see leaflab:job:{1}"\n'
            ),
        }
        write_sources(tmp_path, files)
        assert redis_key_literals(tmp_path) == [
            "services/api/web/session.py:1",
            "services/common/events.py:3",
            "services/worker/sweeper.py:1",
        ]


def test_collections_are_spelled_only_in_their_contract() -> None:
    from tests.fixtures.collection_literals import collection_literals

    assert collection_literals(ROOT) == []


def test_the_collection_rule_catches_a_hand_spelled_collection(tmp_path: Path) -> None:
    from tests.fixtures.collection_literals import collection_literals

    (tmp_path / "services" / "common" / "contracts").mkdir(parents=True)
    (tmp_path / "services" / "common" / "contracts" / "collections.py").write_text(
        'def personal(u):\n    return f"user:{u}"\n'
    )
    clean = tmp_path / "services" / "api.py"
    clean.write_text('HELP = "user: about this user"\nLAB = "lab"\n')
    assert collection_literals(tmp_path) == []
    clean.write_text('def key(p):\n    return f"project:{p}"\nBAD = "user:"\n')
    assert collection_literals(tmp_path) == ["services/api.py:2", "services/api.py:3"]
