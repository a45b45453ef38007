"""An example tool module: list it under ``tool_modules`` in an agents file and the worker registers its tools.

Run a worker from the repository root (so ``examples`` is importable) with
``DOSSIER_AGENTS_FILE=examples/agents.toml``.
"""

from __future__ import annotations

from typing import Literal

from dossier.tools import tool


@tool(name="examples.convert_units", privacy="public", freshness="permanent",
      summary_fields=("value", "unit"), max_attempts=1)
async def convert_units(value: float, source: Literal["km", "mi"], target: Literal["km", "mi"] = "km") -> dict:
    """Convert a distance between kilometres and miles.

    Args:
        value: the distance to convert.
        source: the unit ``value`` is in.
        target: the unit wanted.
    """
    factor = {("km", "mi"): 1 / 1.609344, ("mi", "km"): 1.609344}.get((source, target), 1.0)
    return {"value": round(value * factor, 6), "unit": target}
