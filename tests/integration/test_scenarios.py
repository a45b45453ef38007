"""The seventeen seed scenarios, end to end on real Postgres and real S3.

Each scenario is written into the graph through the live capture and
memory-derivation code, assembled, and persisted; the assembled context must
carry every required fact and none of the forbidden ones, and must be
byte-identical when assembled again from the same snapshot. The seed loader's
refusals (a misspelt field, a missing payload file) are checked on seed
folders written here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.scenarios import all_scenarios
from harness.scenarios.load import SeedError, load_seeds
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


# --------------------------------------------------------------------------- the seed loader

_MINIMAL = """\
description = "One tool call, its result in a file beside the scenario."
required = ["ok"]
forbidden = ["secret"]

[[steps]]
kind = "participant"
key = "assistant"
name = "Assistant"

[[steps]]
kind = "tool"
at = 1
key = "lookup"
participant = "assistant"
name = "kb.lookup"
arguments = { topic = "retention" }
result_file = "lookup.json"

[ask]
participant = "assistant"
at = 2
"""


def _seed(root: Path, folder: str = "01_minimal", toml: str = _MINIMAL, **files: str) -> Path:
    """Write one seed folder under ``root``; ``files`` defaults to the payload ``_MINIMAL`` names."""
    path = root / folder
    path.mkdir()
    (path / "scenario.toml").write_text(toml, encoding="utf-8")
    for name, content in (files or {"lookup.json": '{"ok": true, "note": "secret"}\n'}).items():
        (path / name).write_bytes(content.encode())
    return path


def test_a_seed_reads_its_payload_byte_for_byte(tmp_path) -> None:
    _seed(tmp_path)
    (loaded,) = load_seeds(tmp_path)
    assert loaded.name == "minimal"
    assert loaded.steps[1].result == '{"ok": true, "note": "secret"}\n'


def test_a_misspelt_step_field_names_the_file_and_the_field(tmp_path) -> None:
    folder = _seed(tmp_path, toml=_MINIMAL.replace('name = "kb.lookup"', 'name = "kb.lookup"\nstauts = "failed"'))
    with pytest.raises(SeedError, match=r"steps\.1\.tool\.stauts: Extra inputs are not permitted") as raised:
        load_seeds(tmp_path)
    assert raised.value.path == folder / "scenario.toml"
    assert str(folder / "scenario.toml") in str(raised.value)


def test_a_missing_payload_file_names_the_file(tmp_path) -> None:
    folder = _seed(tmp_path, toml=_MINIMAL.replace("lookup.json", "lookup_v2.json"))
    with pytest.raises(SeedError, match=r"steps\.1\.result_file: no file 'lookup_v2\.json'") as raised:
        load_seeds(tmp_path)
    assert raised.value.path == folder / "scenario.toml"


def test_a_payload_file_nothing_names_is_refused(tmp_path) -> None:
    _seed(tmp_path, **{"lookup.json": "{}", "lookup_old.json": "{}"})
    with pytest.raises(SeedError, match="files not named by scenario.toml: lookup_old.json"):
        load_seeds(tmp_path)


@pytest.mark.parametrize(
    ("second", "problem"), [("02_minimal", "same name as 01_minimal"), ("1_other", "same position as 01_minimal")]
)
def test_seeds_need_distinct_names_and_positions(tmp_path, second, problem) -> None:
    _seed(tmp_path)
    _seed(tmp_path, second)
    with pytest.raises(SeedError, match=problem):
        load_seeds(tmp_path)
