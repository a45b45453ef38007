"""Committed workflow histories still replay against today's workflow code.

Each file in ``histories/`` is one recorded execution (``WorkflowHistory.to_json()``,
recorded by ``python -m harness.replay_histories``). A workflow change that
would break executions already running (another activity, a reordered step,
a changed child id) makes its replay fail here with a nondeterminism error.
The Replayer runs in-process: no server, database or object store is needed.

See README.md before re-recording anything.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer
from temporalio.workflow import _Definition  # the registered name of a workflow class; no public accessor

from workflows import ALL_WORKFLOWS

HISTORIES = Path(__file__).parent / "histories"
FILES = sorted(HISTORIES.glob("*.json"))
RECORD = "python -m harness.replay_histories (see tests/replay/README.md)"


def _started(document: dict) -> dict:
    first = document["events"][0]
    assert first["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_STARTED", "a history begins with its start event"
    return first["workflowExecutionStartedEventAttributes"]


def _load(path: Path) -> tuple[str, str, str]:
    """(workflow id, workflow type, JSON text) of a committed history."""
    text = path.read_text()
    started = _started(json.loads(text))
    # Replay needs the real id: a parent's child ids derive from it and are checked against the history.
    return started["workflowId"], started["workflowType"]["name"], text


@pytest.fixture(scope="module")
def replayer() -> Replayer:
    return Replayer(workflows=ALL_WORKFLOWS, data_converter=pydantic_data_converter)


def test_histories_are_committed() -> None:
    assert FILES, f"no history in {HISTORIES}: record them with {RECORD}"


def test_every_workflow_type_has_a_committed_history() -> None:
    registered = {_Definition.must_from_class(cls).name for cls in ALL_WORKFLOWS}
    recorded = {_load(path)[1] for path in FILES}
    missing = sorted(registered - recorded)
    assert not missing, f"no committed history for {missing}: add a scenario and record it with {RECORD}"


@pytest.mark.parametrize("path", FILES, ids=[path.stem for path in FILES])
async def test_history_replays(path: Path, replayer: Replayer) -> None:
    workflow_id, workflow_type, text = _load(path)
    assert path.name.split(".")[0] == workflow_type, f"{path.name} holds a {workflow_type} history"
    # Raises (e.g. temporalio.workflow.NondeterminismError) when today's code no longer replays it.
    await replayer.replay_workflow(WorkflowHistory.from_json(workflow_id, text))
