"""The seventeen seed scenarios: boundary cases of context assembly, as data.

Each scenario is a folder under ``seeds/``: ``scenario.toml`` (the steps, the
measured call and its fact checks) and the tool payloads beside it, shaped
like what the tools really return (API JSON, CSV exports, build logs,
tracebacks, e-mail; the ids, companies and people are invented). The folder
names' numeric prefix fixes the order; :mod:`harness.scenarios.load` reads and
validates them.
"""

from __future__ import annotations

from harness.scenarios.load import load_seeds
from harness.scenarios.model import Scenario


def all_scenarios() -> tuple[Scenario, ...]:
    """Every seed scenario, in the order of its folder's position.

    Raises:
        SeedError: a seed folder does not load (see :func:`~harness.scenarios.load.load_seeds`).
    """
    return load_seeds()


def scenario(name: str) -> Scenario:
    """The scenario called ``name``.

    Raises:
        KeyError: no scenario has that name.
    """
    for candidate in all_scenarios():
        if candidate.name == name:
            return candidate
    raise KeyError(f"unknown scenario {name!r}")
