"""No step, execution or document status spelled as a literal outside ``contracts/``
(``tests/fixtures/status_positions.py``), and the import-linter contract on
``contracts/`` lists every other module of ``services/common``."""

from __future__ import annotations

import configparser
from pathlib import Path

import pytest

from tests.fixtures.source_tree import write_sources
from tests.fixtures.status_positions import status_literals

ROOT = Path(__file__).resolve().parents[1]


def test_moved_statuses_spelled_only_in_contracts() -> None:
    offenders = status_literals(ROOT)
    if offenders:
        pytest.fail(
            "status literal outside services/common/contracts/ (use StepStatus, "
            "ExecutionStatus, DocumentStatus); offenders:\n  " + "\n  ".join(offenders),
            pytrace=False,
        )


def test_contracts_contract_lists_all_of_common() -> None:
    # A module added to services/common would otherwise be importable from contracts/.
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    forbidden = set(
        config["importlinter:contract:contracts-import-nothing"]["forbidden_modules"].split()
    )
    common = ROOT / "services" / "common"
    modules = {
        f"services.common.{p.stem}"
        for p in common.iterdir()
        if p.name != "contracts"
        and not p.name.startswith("__")
        and (p.suffix == ".py" or (p / "__init__.py").exists())
    }
    assert modules - forbidden == set()


def test_the_checker_sees_a_literal(tmp_path: Path) -> None:
    files = {
        "services/library/lease.py": 'X = update(D).values(status="parsing")\n',
        "services/worker/runtime/tool_exec.py": 'if step.status == "running":\n    pass\n',
        "services/api/docs.py": (
            'if doc.status in ("ready", "queued"):\n    doc.status = "metadata_only"\n'
            'if job.status == "running":\n    pass\n'  # a job's word outside typed modules
            'answer = {"status": "interrupted"}\n'  # an answer's field, another vocabulary
        ),
        "services/common/contracts/statuses.py": 'READY = f(status="ready")\n',
    }
    write_sources(tmp_path, files)
    assert status_literals(tmp_path) == [
        "services/api/docs.py:1: 'ready'",
        "services/api/docs.py:2: 'metadata_only'",
        "services/library/lease.py:1: 'parsing'",
        "services/worker/runtime/tool_exec.py:1: 'running'",
    ]
