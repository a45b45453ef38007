"""The architecture: the layer table below, checked on every import of every module.

::

    policy  <-  contracts  <-  store  <-  activities  <-  workflows (contracts only)
                                              ^                 ^
                                              +---- dossier ----+  <-  worker.py
    harness (scenarios, benchmarks): may import anything but worker.py; nothing imports it

Each row says which project packages a layer may import and which outside
libraries it may not. ``policy/`` is also pure in what it calls: no clock,
entropy, environment or process-dependent builtin. The checks read every
module's AST (imports inside functions and under ``TYPE_CHECKING`` included,
relative imports resolved, ``importlib.import_module("...")`` with a literal
name), so a forbidden import fails here even when no test runs the line that
holds it. A few modules and libraries are confined further (:data:`CONFINED`):
the inspector's web stack and the inspector itself load in the inspector's
process only, never in the worker or the client. test_workflow_imports.py
checks the workflows' imports transitively, by importing them.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

RUNTIME = ("policy", "contracts", "store", "activities", "workflows")
"""The runtime layers, lowest first."""

POLICY_FORBIDDEN = frozenset({
    "temporalio", "sqlalchemy", "asyncpg", "minio", "tiktoken", "os", "logging", "random", "time", "uuid",
    # Other ways to reach the network, the disk, threads or the environment.
    "requests", "httpx", "socket", "subprocess", "threading", "secrets", "dotenv", "pydantic_settings",
    # Metrics, tracing and the web stack are the edges' business.
    "prometheus_client", "opentelemetry", "starlette", "jinja2", "uvicorn",
})
"""What the pure core never imports: I/O, clocks, entropy, the environment."""

IO_LIBRARIES = frozenset({"sqlalchemy", "asyncpg", "minio", "urllib3", "tiktoken", "alembic", "httpx", "requests"})
"""Database, object-store, tokenizer and HTTP libraries: the activities' business."""


@dataclass(frozen=True)
class Layer:
    """One row of the layer table."""

    imports: frozenset[str]
    """The project packages it may import (besides itself)."""
    forbidden: frozenset[str] = frozenset()
    """Outside libraries it may not import."""


LAYERS: dict[str, Layer] = {
    "policy": Layer(frozenset(), POLICY_FORBIDDEN),
    "contracts": Layer(frozenset({"policy"}), IO_LIBRARIES | {"temporalio"}),
    "store": Layer(frozenset({"policy", "contracts"}), frozenset({"temporalio", "tiktoken"})),
    "activities": Layer(frozenset({"policy", "contracts", "store"})),
    # Orchestration only: payload models and activity names, never the I/O behind them (metrics and spans
    # come from the worker's interceptors and the activities, not from workflow code).
    "workflows": Layer(frozenset({"contracts"}), IO_LIBRARIES | {"prometheus_client", "opentelemetry"}),
    # The application: settings, the composition root, embedded services, client, CLI.
    "dossier": Layer(frozenset(RUNTIME)),
    # The worker process's entry point; nothing imports it.
    "worker": Layer(frozenset({"dossier"})),
    # Development harnesses drive everything from outside.
    "harness": Layer(frozenset({*RUNTIME, "dossier"})),
}
"""The architecture, stated once."""

PROJECT = frozenset({*LAYERS, "tests"})

CONFINED: dict[str, frozenset[str]] = {
    # The inspector's web stack is loaded by the inspector process only, never by the worker, the client or
    # the CLI's other commands.
    "starlette": frozenset({"dossier.inspector"}),
    "jinja2": frozenset({"dossier.inspector"}),
    "uvicorn": frozenset({"dossier.inspector"}),
    # The inspector itself: its own modules, the command that serves it, the demo's closing audit trail (it
    # prints a login URL, inside a function) and the hardening suite's prober.
    "dossier.inspector": frozenset({"dossier.inspector", "dossier.commands.inspector", "dossier.commands.demo_audit",
                                    "harness"}),
}
"""Modules and libraries that only the named modules (and the modules under them) may import."""

FORBIDDEN_CALLS = frozenset({
    ("datetime", "now"), ("datetime", "utcnow"), ("datetime", "today"), ("date", "today"),
    ("time", "time"), ("time", "monotonic"), ("time", "perf_counter"), ("time", "time_ns"),
    ("uuid", "uuid1"), ("uuid", "uuid4"), ("os", "urandom"), ("os", "getenv"), ("os", "environ"),
})
"""``<name>.<attr>`` calls that read a clock, the environment or entropy (forbidden in ``policy``)."""

FORBIDDEN_BUILTINS = frozenset({"hash", "id", "open", "input", "print"})
"""Builtins whose results depend on the process (hash seed, addresses) or do I/O (forbidden in ``policy``)."""


# --------------------------------------------------------------------------- the checker


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
            # ``from a import b`` may import the module ``a.b``: name it too (a confined module, a clock call).
            found += [(node.lineno, f"{name}.{alias.name}") for alias in node.names if alias.name != "*"]
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and ((isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                   or (isinstance(node.func, ast.Name) and node.func.id in ("import_module", "__import__")))):
            found.append((node.lineno, node.args[0].value))
    return found


def _dotted(node: ast.AST) -> tuple[str, ...]:
    """``a.b.c`` as ``("a", "b", "c")``; empty for anything that is not a plain name chain."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return tuple(reversed(parts))
    return ()


def impure_calls(tree: ast.AST) -> list[tuple[int, str]]:
    """Calls of a clock, the environment, entropy or a process-dependent builtin."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            dotted = _dotted(node.func)
            if len(dotted) >= 2 and dotted[-2:] in FORBIDDEN_CALLS:
                found.append((node.lineno, ".".join(dotted)))
            elif len(dotted) == 1 and dotted[0] in FORBIDDEN_BUILTINS:
                found.append((node.lineno, dotted[0]))
        elif isinstance(node, ast.Attribute) and _dotted(node)[-2:] == ("os", "environ"):
            found.append((node.lineno, "os.environ"))
    return found


def _under(name: str, prefix: str) -> bool:
    """Whether dotted ``name`` is ``prefix`` or inside it."""
    return name == prefix or name.startswith(prefix + ".")


def violations(package: str, source: str, module: str, is_package: bool = False) -> list[str]:
    """What in ``source`` (a module of ``package``) the layer table forbids."""
    layer = LAYERS[package]
    tree = ast.parse(source)
    problems = []
    for line, name in imported_modules(tree, module, is_package):
        top = name.split(".")[0]
        if top in PROJECT and top != package and top not in layer.imports:
            problems.append(f"line {line}: {package} imports {name}")
        elif top in layer.forbidden or (package == "policy" and tuple(name.split(".")[-2:]) in FORBIDDEN_CALLS):
            problems.append(f"line {line}: {package} imports {name}")
        for confined, allowed in CONFINED.items():
            if _under(name, confined) and not any(_under(module, one) for one in allowed):
                problems.append(f"line {line}: {module} imports {name}, confined to {', '.join(sorted(allowed))}")
    if package == "policy":
        problems += [f"line {line}: policy calls {name}()" for line, name in impure_calls(tree)]
    return problems


# --------------------------------------------------------------------------- the tree follows the table


def test_the_table_names_every_top_level_package_and_root_module() -> None:
    found = {p.parent.name for p in REPO.glob("*/__init__.py")} | {p.stem for p in REPO.glob("*.py")}
    assert found - {"tests"} == set(LAYERS), "a new top-level package needs a row in the layer table"


def test_the_runtime_never_reaches_up() -> None:
    """Nothing in the runtime imports the application, the harness or the worker entry point."""
    for name in RUNTIME:
        assert not LAYERS[name].imports & {"dossier", "harness", "worker"}
    assert all("worker" not in layer.imports and "harness" not in layer.imports for layer in LAYERS.values())


def test_the_policy_modules_are_found() -> None:
    names = {path.stem for path in _modules("policy")}
    assert {"admission", "assembler", "budget", "derive", "enums", "gates", "legacy", "lines", "links", "policy",
            "records", "rehydration", "render", "selection", "tokens", "tools", "transcript",
            "explain", "pricing", "versions"} <= names


@pytest.mark.parametrize("package", sorted(LAYERS))
def test_every_module_follows_the_layer_table(package: str) -> None:
    problems = []
    for path in _modules(package):
        problems += [f"{path.relative_to(REPO)} {problem}" for problem in violations(
            package, path.read_text(encoding="utf-8"), _module_name(path), path.name == "__init__.py")]
    assert not problems, "against the layer table:\n" + "\n".join(problems)


# --------------------------------------------------------------------------- the checker catches what it must

FORBIDDEN = [
    ("policy", "policy.gates", "from contracts import Scope", "imports contracts"),
    ("policy", "policy.gates", "import os", "imports os"),
    ("policy", "policy.gates", "import os.path", "imports os.path"),
    ("policy", "policy.gates", "from logging import getLogger", "imports logging"),
    ("policy", "policy.gates", "import tiktoken", "imports tiktoken"),
    ("policy", "policy.gates", "from temporalio import workflow", "imports temporalio"),
    ("policy", "policy.gates", "from time import time", "imports time"),
    ("policy", "policy.gates", "from datetime import datetime\nx = datetime.now()", "calls datetime.now()"),
    ("policy", "policy.gates", "import datetime\nx = datetime.datetime.utcnow()", "calls datetime.datetime.utcnow()"),
    ("policy", "policy.gates", "from datetime import date\nx = date.today()", "calls date.today()"),
    ("policy", "policy.gates", "x = hash('a')", "calls hash()"),
    ("contracts", "contracts", "from store.graph import get_branch", "imports store.graph"),
    ("contracts", "contracts", "from temporalio import workflow", "imports temporalio"),
    ("store", "store.tools", "from activities.ingest import ToolOutcome", "imports activities.ingest"),
    ("store", "store.tools", "import workflows", "imports workflows"),
    ("activities", "activities.turns", "from dossier.runtime import SAMPLE_WORKSPACE", "imports dossier.runtime"),
    ("activities", "activities.turns", "from workflows.turn import AgentTurnWorkflow", "imports workflows.turn"),
    ("activities", "activities.turns", "import harness.scenarios.runner", "imports harness.scenarios.runner"),
    ("workflows", "workflows.turn", "from activities.turns import message_id_for", "imports activities.turns"),
    ("workflows", "workflows.turn", "from store import graph", "imports store"),
    ("workflows", "workflows.turn", "from policy.enums import RuntimeKind", "imports policy.enums"),
    ("workflows", "workflows.turn", "import sqlalchemy", "imports sqlalchemy"),
    ("dossier", "dossier.client", "from harness.bench import suite", "imports harness.bench"),
    ("dossier", "dossier.cli", "from worker import main", "imports worker"),
    ("harness", "harness.bench.suite", "import worker", "imports worker"),
    ("activities", "activities.turns", "def f():\n    from dossier.settings import Settings", "imports dossier.settings"),
    ("activities", "activities.tools.base", "if TYPE_CHECKING:\n    from dossier.runtime import x",
     "imports dossier.runtime"),
    ("store", "store.tools", "importlib.import_module('activities.turns')", "imports activities.turns"),
    ("activities", "activities.providers.base", "from ...dossier import runtime", "imports dossier"),
    ("policy", "policy.explain", "import prometheus_client", "imports prometheus_client"),
    ("policy", "policy.versions", "from opentelemetry import trace", "imports opentelemetry"),
    ("workflows", "workflows.visibility", "from opentelemetry import trace", "imports opentelemetry"),
    ("workflows", "workflows.turn", "from prometheus_client import Counter", "imports prometheus_client"),
    ("dossier", "dossier.client", "from dossier.inspector import reads", "imports dossier.inspector,"),
    ("dossier", "dossier.cli", "from dossier import inspector", "imports dossier.inspector,"),
    ("dossier", "dossier.runtime", "from dossier.inspector.app import create_app", "imports dossier.inspector.app"),
    ("dossier", "dossier.audit", "import jinja2", "imports jinja2"),
    ("dossier", "dossier.services.inspector", "from starlette.applications import Starlette",
     "imports starlette.applications"),
    ("activities", "activities.metrics", "import uvicorn", "imports uvicorn"),
    ("dossier", "dossier.inspectors", "from . import inspector", "imports dossier.inspector,"),
]


@pytest.mark.parametrize(("package", "module", "source", "problem"), FORBIDDEN, ids=[f[2] for f in FORBIDDEN])
def test_the_checker_catches_a_forbidden_import(package: str, module: str, source: str, problem: str) -> None:
    assert any(problem in found for found in violations(package, source, module))


ALLOWED = [
    ("policy", "policy.render", "from policy.records import Record\nfrom . import enums\nfrom datetime import datetime"),
    ("activities", "activities.tools.registry", "from activities.tools import diag"),
    ("activities", "activities.tools.registry", "from . import diag"),
    ("activities", "activities.providers.scripted", "from .context import read_context"),
    ("store", "store.tools", "from policy.records import ArtifactRecord"),
    ("workflows", "workflows.turn", "from contracts import ActivityName\nfrom temporalio import workflow"),
    ("dossier", "dossier.runtime", "from workflows import ALL_WORKFLOWS"),
    ("harness", "harness.bench.suite", "from dossier.runtime import open_graph"),
    ("worker", "worker", "from dossier.runtime import run_worker"),
    ("dossier", "dossier.inspector.app", "from jinja2 import Environment\nfrom starlette.routing import Route"),
    ("dossier", "dossier.inspector.serve", "import uvicorn\nfrom dossier.inspector.app import create_app"),
    ("dossier", "dossier.commands.inspector", "def f():\n    from dossier.inspector.serve import serve"),
    ("harness", "harness.harden.isolation_inspector", "from dossier.inspector.app import READ_PATHS"),
    ("activities", "activities.metrics", "from prometheus_client import Counter"),
    ("store", "store.tracing", "from opentelemetry import trace"),
]


@pytest.mark.parametrize(("package", "module", "source"), ALLOWED, ids=[s[2] for s in ALLOWED])
def test_the_checker_allows_what_the_table_allows(package: str, module: str, source: str) -> None:
    assert violations(package, source, module, is_package=module == "activities.providers.scripted") == []


# --------------------------------------------------------------------------- no cycle inside a layer


def module_imports(tree: ast.AST, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The project modules in ``known`` that ``module`` imports, ``TYPE_CHECKING`` and function-level ones included.

    ``from pkg import sub`` of a submodule is an edge to ``pkg.sub`` only: importing any ``pkg.x`` runs
    ``pkg/__init__`` first anyway, so the package is no extra edge unless a name comes from it.
    """
    found: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - (node.level - 1)] if node.level else []
            source = ".".join(filter(None, [*base, node.module or ""]))
            subs = {f"{source}.{alias.name}" for alias in node.names}
            found |= subs & known
            if subs - known:
                found.add(source)
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.func, (ast.Attribute, ast.Name))
              and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"):
            found.add(str(node.args[0].value))
    return (found & known) - {module}


def import_cycles(sources: dict[str, tuple[str, bool]]) -> list[list[str]]:
    """Cycles among modules (name -> (source, is_package)): each strongly connected set of two or more."""
    known = set(sources)
    edges = {name: sorted(module_imports(ast.parse(src), name, pkg, known)) for name, (src, pkg) in sources.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in edges[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return cycles


def _sources(package: str) -> dict[str, tuple[str, bool]]:
    return {_module_name(path): (path.read_text(encoding="utf-8"), path.name == "__init__.py")
            for path in _modules(package)}


@pytest.mark.parametrize("package", sorted(LAYERS))
def test_no_layer_imports_itself_in_a_cycle(package: str) -> None:
    """A cycle inside a layer means two modules own one idea; type-only imports close cycles too."""
    assert import_cycles(_sources(package)) == []


def test_the_cycle_check_sees_a_type_only_import() -> None:
    # The cycle policy once had: native plans the appended part, selection typed it under TYPE_CHECKING.
    sources = {
        "policy.native": ("from policy.selection import Item\n", False),
        "policy.selection": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                             "    from policy.native import EventsPlan\n", False),
        "policy.plans": ("", False),
    }
    assert import_cycles(sources) == [["policy.native", "policy.selection"]]
    sources["policy.selection"] = ("from policy.plans import EventsPlan\n", False)
    assert import_cycles(sources) == []


def test_a_submodule_imported_from_its_package_is_no_edge_to_the_package() -> None:
    sources = {"pkg": ("from pkg.stack import up\n", True), "pkg.stack": ("from pkg import errors\n", False),
               "pkg.errors": ("", False)}
    assert import_cycles(sources) == []
    sources["pkg.stack"] = ("from pkg import errors, up_all\n", False)  # a name from the package: an edge
    assert import_cycles(sources) == [["pkg", "pkg.stack"]]


# --------------------------------------------------------------------------- small signatures

MAX_POSITIONAL = 6
"""Past this many positional parameters a call site is a row of bare values: pass a record or keywords."""


def long_signatures(source: str) -> list[str]:
    """``name(count)`` of each function in ``source`` taking more than :data:`MAX_POSITIONAL` positional arguments."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            positional = [a.arg for a in (*node.args.posonlyargs, *node.args.args) if a.arg not in ("self", "cls")]
            if len(positional) > MAX_POSITIONAL:
                found.append(f"line {node.lineno}: {node.name}({len(positional)})")
    return found


@pytest.mark.parametrize("package", RUNTIME)
def test_no_runtime_function_takes_more_than_six_positional_arguments(package: str) -> None:
    problems = [f"{path.relative_to(REPO)} {found}" for path in _modules(package)
                for found in long_signatures(path.read_text(encoding="utf-8"))]
    assert not problems, "\n".join(problems)


def test_the_signature_check_counts_positional_parameters_only() -> None:
    assert long_signatures("def f(a, b, c, d, e, f, g): ...") == ["line 1: f(7)"]
    assert long_signatures("def f(self, a, b, c, d, e, f): ...\ndef g(a, b, *, c, d, e, f, g): ...") == []
