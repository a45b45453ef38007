"""The docs' Layout page matches the tree: every path it names exists, every top-level entry is named."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_PATH = re.compile(r"(?<![\w/.-])([A-Za-z_][\w.-]*(?:/[\w.-]+)*/?)(?=[\s,;:()]|$)")


def _layout() -> list[str]:
    text = (REPO / "docs" / "layout.md").read_text(encoding="utf-8")
    return text.split("```", 2)[1].strip("\n").splitlines()


def _entries() -> dict[str, list[str]]:
    """Top-level entry -> the paths its lines name (``x.py`` and ``dir/`` tokens)."""
    entries: dict[str, list[str]] = {}
    current = ""
    for line in _layout():
        if line and not line[0].isspace():
            current, line = line.split()[0], line[len(line.split()[0]):]
            entries[current] = []
        entries[current] += [t for t in _PATH.findall(line) if t.endswith((".py", "/", ".yml"))]
    return entries


def _modules_listed_by_name() -> list[tuple[str, str]]:
    """``(top, module)`` for the bare module names after "one module per stage:" / "one workflow per module:"."""
    texts: dict[str, str] = {}
    top = ""
    for line in _layout():
        if line and not line[0].isspace():
            top = line.split()[0]
        texts[top] = texts.get(top, "") + " " + line.strip()
    listed: list[tuple[str, str]] = []
    for top, text in texts.items():
        for match in re.finditer(r"one (?:module per stage|workflow per module): ([\w,\s]+)", text):
            listed += [(top, name.strip()) for name in match.group(1).split(",") if name.strip()]
    return listed


def _exists(top: Path, name: str) -> bool:
    if (REPO / name.rstrip("/")).exists():
        return True
    base = top if top.is_dir() else REPO
    return any(base.rglob(name.rstrip("/").split("/")[-1]))


def test_the_layout_is_one_screen() -> None:
    assert len(_layout()) <= 24


def test_every_path_the_layout_names_exists() -> None:
    missing = [f"{top}: {name}" for top, names in _entries().items() for name in [top, *names]
               if not _exists(REPO / top.rstrip("/"), name)]
    assert not missing, "the docs' Layout names paths that are not in the tree:\n" + "\n".join(missing)


def test_every_module_the_layout_lists_by_name_exists() -> None:
    listed = _modules_listed_by_name()
    assert len(listed) >= 10  # the stages of the assembler and the workflows
    missing = [f"{top}{name}.py" for top, name in listed if not (REPO / top / f"{name}.py").is_file()]
    assert not missing, f"the docs' Layout lists modules that do not exist: {missing}"


def test_every_top_level_package_and_module_is_in_the_layout() -> None:
    named = set(_entries())
    found = {f"{p.parent.name}/" for p in REPO.glob("*/__init__.py")} | {p.name for p in REPO.glob("*.py")}
    assert found <= named, f"not in the docs' Layout: {sorted(found - named)}"


def test_the_checker_notices_a_path_that_is_not_there() -> None:
    assert not _exists(REPO / "policy", "stages.py")
    assert _exists(REPO / "policy", "admission.py") and _exists(REPO / "harness", "seeds/")


AUDIT_MODULES = ("policy/versions.py", "policy/explain.py", "policy/pricing.py", "store/tracing.py",
                 "activities/replay.py", "activities/metrics.py", "workflows/visibility.py", "dossier/audit.py",
                 "dossier/telemetry.py", "dossier/visibility.py", "dossier/inspector/",
                 "harness/harden/isolation_inspector.py")
"""Modules issue 13 (audit) added: each is named, with its purpose, under its top-level entry."""


def test_the_audit_modules_are_in_the_layout() -> None:
    entries = _entries()
    missing = [path for path in AUDIT_MODULES
               if (path.rstrip("/").split("/")[-1] + ("/" if path.endswith("/") else ""))
               not in entries[path.split("/")[0] + "/"]]
    assert all((REPO / path).exists() for path in AUDIT_MODULES)
    assert not missing, f"not in the docs' Layout: {missing}"
