"""Taint, as properties: generated graphs never leak a marker to a route, never hold a looser derived record.

The generator and both properties live in :mod:`harness.harden.taint` (what
``dossier harden`` counts); here hypothesis shrinks any failure to a small
graph: participants on several routes, branches, tool calls of every class
and of an unknown tool, failures, generated files, subagent promotions,
memories built from several artifacts, checkpoints, skill states and user
memories built from other records.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from property_examples import examples

from harness.harden.taint import CASES, run_case, run_taint


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(CASES)
def test_no_context_leaks_and_no_derived_record_is_looser_than_its_sources(case) -> None:
    world = run_case(case)
    assert world.contexts > 0
    assert not world.violations, "\n".join(world.violations[:5])


def test_the_harden_figures_count_cases_and_violations() -> None:
    assert run_taint(cases=20) == (20, 0)
