"""The seventeen seed scenarios: boundary cases of context assembly, as data.

Each module in :mod:`harness.scenarios.catalog` defines ``SCENARIOS``, a tuple
of :class:`~harness.scenarios.model.Scenario`. :func:`all_scenarios` gathers
them in a fixed order.
"""

from __future__ import annotations

import importlib
import pkgutil

from harness.scenarios.model import Scenario


def all_scenarios() -> tuple[Scenario, ...]:
    """Every scenario from every catalog module, sorted by module then definition order."""
    from harness.scenarios import catalog

    found: list[Scenario] = []
    for module_info in sorted(pkgutil.iter_modules(catalog.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{catalog.__name__}.{module_info.name}")
        found.extend(getattr(module, "SCENARIOS", ()))
    names = [scenario.name for scenario in found]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"duplicate scenario names: {duplicates}")
    return tuple(found)


def scenario(name: str) -> Scenario:
    """The scenario called ``name``.

    Raises:
        KeyError: no scenario has that name.
    """
    for candidate in all_scenarios():
        if candidate.name == name:
            return candidate
    raise KeyError(f"unknown scenario {name!r}")
