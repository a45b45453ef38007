"""The layers import one way: the table below is the architecture, and any import against it fails here.

::

    policy  <-  contracts  <-  store  <-  activities  <-  workflows (contracts only)
                                              ^                 ^
                                              +---- dossier ----+  <-  worker.py
    harness (scenarios, benchmarks): may import anything but worker.py; nothing imports it

Static checks over every module's AST (imports inside functions and under
``TYPE_CHECKING`` included, relative imports resolved, and
``importlib.import_module("...")`` with a literal name), so a forbidden import
fails even when no test executes the line that contains it. What each layer may
import from outside the project is checked elsewhere: ``policy/`` in
test_policy_purity.py, ``workflows/`` in test_workflow_imports.py.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

RUNTIME = ("policy", "contracts", "store", "activities", "workflows")
"""The runtime layers, lowest first."""

ALLOWED: dict[str, frozenset[str]] = {
    "policy": frozenset(),
    "contracts": frozenset({"policy"}),
    "store": frozenset({"policy", "contracts"}),
    "activities": frozenset({"policy", "contracts", "store"}),
    # Orchestration only: payload models and activity names, never the I/O behind them.
    "workflows": frozenset({"contracts"}),
    # The application: settings, the composition root, embedded services, client, CLI.
    "dossier": frozenset({*RUNTIME}),
    # The worker process's entry point; nothing imports it.
    "worker": frozenset({"dossier"}),
    # Development harnesses drive everything from outside.
    "harness": frozenset({*RUNTIME, "dossier"}),
}
"""Project package -> the project packages it may import (besides itself)."""

PROJECT = frozenset({*ALLOWED, "tests"})


def _modules(package: str) -> list[Path]:
    root = REPO / package
    return sorted(root.rglob("*.py")) if root.is_dir() else [REPO / f"{package}.py"]


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(tree: ast.AST, module: str, is_package: bool = False) -> list[tuple[int, str]]:
    """``(line, dotted module)`` of every import in ``tree``, relative ones resolved against ``module``."""
    found: list[tuple[int, str]] = []
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                name = ".".join(filter(None, [*base, node.module or ""]))
            else:
                name = node.module or ""
            found.append((node.lineno, name))
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and ((isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                   or (isinstance(node.func, ast.Name) and node.func.id in ("import_module", "__import__")))):
            found.append((node.lineno, node.args[0].value))
    return found


def violations(package: str, source: str, module: str, is_package: bool = False) -> list[str]:
    """Imports in ``source`` (a module of ``package``) that the layer table forbids."""
    problems = []
    for line, name in imported_modules(ast.parse(source), module, is_package):
        top = name.split(".")[0]
        if top in PROJECT and top != package and top not in ALLOWED[package]:
            problems.append(f"line {line}: {package} imports {name}")
    return problems


def test_the_table_names_every_top_level_package_and_root_module() -> None:
    found = {p.parent.name for p in REPO.glob("*/__init__.py")} | {p.stem for p in REPO.glob("*.py")}
    assert found - {"tests"} == set(ALLOWED), "a new top-level package needs a row in the layer table"


def test_the_runtime_never_reaches_up() -> None:
    """Nothing in the runtime imports the application, the harness or the worker entry point."""
    for layer in RUNTIME:
        assert not ALLOWED[layer] & {"dossier", "harness", "worker"}
    assert all("worker" not in allowed and "harness" not in allowed for allowed in ALLOWED.values())


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_every_import_follows_the_layer_table(package: str) -> None:
    problems = []
    for path in _modules(package):
        problems += [f"{path.relative_to(REPO)} {problem}" for problem in violations(
            package, path.read_text(encoding="utf-8"), _module_name(path), path.name == "__init__.py")]
    assert not problems, "imports against the layer table:\n" + "\n".join(problems)


FORBIDDEN = [
    ("policy", "policy.gates", "from contracts import Scope"),
    ("contracts", "contracts", "from store.graph import get_branch"),
    ("store", "store.tools", "from activities.ingest import ToolOutcome"),
    ("store", "store.tools", "import workflows"),
    ("activities", "activities.turns", "from dossier.runtime import SAMPLE_WORKSPACE"),
    ("activities", "activities.turns", "from workflows.turn import AgentTurnWorkflow"),
    ("activities", "activities.turns", "import harness.scenarios.runner"),
    ("workflows", "workflows.turn", "from activities.turns import message_id_for"),
    ("workflows", "workflows.turn", "from store import graph"),
    ("workflows", "workflows.turn", "from policy.enums import RuntimeKind"),
    ("dossier", "dossier.client", "from harness.bench import suite"),
    ("dossier", "dossier.cli", "from worker import main"),
    ("harness", "harness.bench.suite", "import worker"),
    ("activities", "activities.turns", "def f():\n    from dossier.settings import Settings"),
    ("activities", "activities.tools.base", "if TYPE_CHECKING:\n    from dossier.runtime import x"),
    ("store", "store.tools", "importlib.import_module('activities.turns')"),
    ("activities", "activities.providers.base", "from ...dossier import runtime"),
]


@pytest.mark.parametrize(("package", "module", "source"), FORBIDDEN, ids=[f[2] for f in FORBIDDEN])
def test_the_checker_catches_a_forbidden_import(package: str, module: str, source: str) -> None:
    assert violations(package, source, module)


ALLOWED_SNIPPETS = [
    ("activities", "activities.tools.registry", "from activities.tools import diag"),
    ("activities", "activities.tools.registry", "from . import diag"),
    ("activities", "activities.providers.scripted", "from .context import read_context"),
    ("store", "store.tools", "from policy.records import ArtifactRecord"),
    ("workflows", "workflows.turn", "from contracts import ActivityName"),
    ("dossier", "dossier.runtime", "from workflows import ALL_WORKFLOWS"),
    ("harness", "harness.bench.suite", "from dossier.runtime import open_graph"),
    ("worker", "worker", "from dossier.runtime import run_worker"),
]


@pytest.mark.parametrize(("package", "module", "source"), ALLOWED_SNIPPETS, ids=[s[2] for s in ALLOWED_SNIPPETS])
def test_the_checker_allows_what_the_table_allows(package: str, module: str, source: str) -> None:
    is_package = module == "activities.providers.scripted"
    assert violations(package, source, module, is_package) == []
