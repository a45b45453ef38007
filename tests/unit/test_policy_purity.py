"""``policy/`` stays pure: no I/O libraries, no clocks or randomness, no other project package.

Static checks over every module's AST, so a forbidden import fails here even
when no test happens to execute the line that contains it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
POLICY = REPO / "policy"
MODULES = sorted(POLICY.rglob("*.py"))

FORBIDDEN_MODULES = frozenset({
    "temporalio", "sqlalchemy", "asyncpg", "minio", "tiktoken", "os", "logging", "random", "time", "uuid",
    # Other ways to reach the network, the disk, threads or the environment.
    "requests", "httpx", "socket", "subprocess", "threading", "secrets", "dotenv", "pydantic_settings",
})
"""Top-level packages ``policy/`` must never import."""

FORBIDDEN_CALLS = frozenset({
    ("datetime", "now"), ("datetime", "utcnow"), ("datetime", "today"), ("date", "today"),
    ("time", "time"), ("time", "monotonic"), ("time", "perf_counter"), ("time", "time_ns"),
    ("uuid", "uuid1"), ("uuid", "uuid4"), ("os", "urandom"), ("os", "getenv"), ("os", "environ"),
})
"""``<name>.<attr>`` calls that read a clock, the environment or entropy."""

FORBIDDEN_BUILTINS = frozenset({"hash", "id", "open", "input", "print"})
"""Builtins whose results depend on the process (hash seed, addresses) or do I/O."""


def _project_packages() -> frozenset[str]:
    """Top-level importable names of this repository, other than ``policy``."""
    names = {path.stem for path in REPO.glob("*.py")}
    names |= {path.parent.name for path in REPO.glob("*/__init__.py")}
    # Named in the architecture even before they exist on disk.
    names |= {"contracts", "worker", "store", "activities", "workflows", "dossier", "tests"}
    return frozenset(names - {"policy"})


def _imports(tree: ast.AST) -> list[tuple[int, str]]:
    """``(line, top-level module)`` of every absolute import; relative imports stay inside ``policy``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module.split(".")[0]))
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


def _forbidden_calls(tree: ast.AST) -> list[tuple[int, str]]:
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


def _from_imported_names(tree: ast.AST) -> list[tuple[int, str]]:
    """``from datetime import datetime`` is fine; ``from time import time`` is not."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                if (node.module.split(".")[-1], alias.name) in FORBIDDEN_CALLS:
                    found.append((node.lineno, f"{node.module}.{alias.name}"))
    return found


def test_policy_modules_are_found():
    names = {path.stem for path in MODULES}
    assert {"admission", "assembler", "budget", "derive", "enums", "gates", "legacy", "lines", "policy", "records",
            "rehydration", "render", "selection", "tokens", "tools", "transcript"} <= names


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(REPO)) for p in MODULES])
def test_policy_module_is_pure(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    problems = []
    project = _project_packages()
    for line, module in _imports(tree):
        if module in FORBIDDEN_MODULES:
            problems.append(f"line {line}: imports {module}")
        if module in project:
            problems.append(f"line {line}: imports project package {module} (policy imports nothing from the project)")
    problems += [f"line {line}: imports {name}" for line, name in _from_imported_names(tree)]
    problems += [f"line {line}: calls {name}()" for line, name in _forbidden_calls(tree)]
    assert not problems, f"{path.relative_to(REPO)} is not pure:\n" + "\n".join(problems)


BAD_SNIPPETS = [
    ("import os", "imports os"),
    ("import os.path", "imports os"),
    ("from logging import getLogger", "imports logging"),
    ("import tiktoken", "imports tiktoken"),
    ("from temporalio import workflow", "imports temporalio"),
    ("from store.models import graph", "imports project package store"),
    ("import activities.tokens", "imports project package activities"),
    ("from time import time", "imports time"),
    ("from datetime import datetime\nx = datetime.now()", "calls datetime.now()"),
    ("import datetime\nx = datetime.datetime.utcnow()", "calls datetime.datetime.utcnow()"),
    ("from datetime import date\nx = date.today()", "calls date.today()"),
    ("x = hash('a')", "calls hash()"),
]


@pytest.mark.parametrize(("source", "problem"), BAD_SNIPPETS, ids=[s for s, _ in BAD_SNIPPETS])
def test_the_checker_catches_impurity(source: str, problem: str):
    """The purity check itself must fail on each kind of violation."""
    tree = ast.parse(source)
    project = _project_packages()
    found = [f"imports {m}" for _, m in _imports(tree) if m in FORBIDDEN_MODULES]
    found += [f"imports project package {m}" for _, m in _imports(tree) if m in project]
    found += [f"calls {name}()" for _, name in _forbidden_calls(tree)]
    assert problem in found


def test_relative_and_policy_imports_are_allowed():
    tree = ast.parse("from policy.records import Record\nfrom . import enums\nfrom datetime import datetime, timedelta")
    assert _imports(tree) == [(1, "policy"), (3, "datetime")]
    assert not _from_imported_names(tree)
