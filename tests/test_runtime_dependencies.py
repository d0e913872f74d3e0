"""Every third-party module the services import is installed by a plain
``pip install .``: a runtime dependency or one of theirs, never only a dev extra.

Found by booting the compose image (deploy/offline/build_images.sh installs only
the runtime dependencies): the worker imported jsonschema, which only the dev
extra listed, and crashed at start in every deployment but the test machine's.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Imported by code that runs in another interpreter, never Leaflab's own.
OWN_VENV = {"llama_cpp": "services/local_model runs under .venv-llama (ensure_real_model.sh)"}


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;(]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _closure(requirements: list[str]) -> set[str]:
    """The distributions a runtime install brings: these and, transitively, theirs."""
    seen: set[str] = set()
    todo = [_name(r) for r in requirements]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            needs = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        # Extras' requirements ("; extra == ...") come only when the extra is asked for.
        todo += [_name(r) for r in needs if "extra ==" not in r]
    return seen


def _imported_top_levels() -> dict[str, str]:
    """Top-level module -> a file importing it, over services/ (absolute imports)."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / "services").rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], str(path.relative_to(ROOT)))
    return found


def test_every_imported_package_is_a_runtime_dependency() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = _closure(project["dependencies"])
    providers = metadata.packages_distributions()
    missing = {}
    for module, where in _imported_top_levels().items():
        if module == "services" or module in sys.stdlib_module_names or module in OWN_VENV:
            continue
        dists = {d.lower().replace("_", "-") for d in providers.get(module, [])}
        assert dists, f"{module} (imported by {where}) is not installed at all"
        if not dists & runtime:
            missing[module] = (where, sorted(dists))
    assert missing == {}, f"imported by the services but not a runtime dependency: {missing}"
