"""The seventeen seed scenarios, end to end on real Postgres and real S3.

Each scenario is written into the graph through the live capture and
memory-derivation code, assembled, and persisted; the assembled context must
carry every required fact and none of the forbidden ones, and must be
byte-identical when assembled again from the same snapshot.
"""

from __future__ import annotations

import pytest

from harness.scenarios import all_scenarios
from harness.scenarios.runner import run_scenario, reassemble
from store import graph

SCENARIOS = all_scenarios()


def test_there_are_seventeen_scenarios() -> None:
    assert len(SCENARIOS) == 17
    assert len({s.name for s in SCENARIOS}) == 17


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_forbidden_facts_are_really_in_the_scenario(scenario) -> None:
    """A forbidden fact that appears nowhere would make its absence check vacuous."""
    data = "\n".join(
        str(value) for step in scenario.steps for value in step.model_dump(mode="json").values()
    )
    assert scenario.forbidden, "a scenario must say what may not reach the model"
    assert [fact for fact in scenario.forbidden if fact not in data] == []


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
async def test_scenario_facts(scenario, graph_deps) -> None:
    outcome = await run_scenario(scenario, graph_deps)

    assert outcome.required_missing == [], "required facts missing from the assembled context"
    assert outcome.forbidden_present == [], "forbidden facts leaked into the assembled context"
    # The comparison is like for like: the baseline is a real, modest transcript.
    assert 900 <= outcome.legacy_tokens <= 2600
    assert outcome.assembled_tokens < outcome.legacy_tokens

    async with graph_deps.sessions() as session:
        saved = await graph.get_context_assembly(session, outcome.account_id, outcome.assembly_id)
    assert saved.record.content_sha256 == outcome.record.content_sha256
    assert len(saved.decisions) == len(outcome.decisions) > 0


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
async def test_scenario_assembly_is_deterministic(scenario, graph_deps) -> None:
    outcome = await run_scenario(scenario, graph_deps)
    again = await reassemble(outcome, graph_deps)
    assert again.result.record.content_sha256 == outcome.record.content_sha256
    assert again.result.decisions == outcome.decisions
    assert again.result.messages == outcome.messages
