"""How many examples a property runs: its full count under the ``ci`` profile, a tenth under ``dev``."""

from __future__ import annotations

from hypothesis import settings


def examples(full: int) -> int:
    """``full`` under the ``ci`` Hypothesis profile (CI, ``make test-all``); a tenth of it, at least 10, otherwise."""
    return full if settings.get_current_profile_name() == "ci" else max(10, full // 10)
