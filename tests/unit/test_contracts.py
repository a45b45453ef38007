"""The boundary contracts: compatible across versions, and named the same on both sides.

Activity and workflow names are stored in workflow histories; a name that
differs between the worker and its callers fails only at run time, so the
constants in :mod:`contracts` are checked against what is registered and
what is called.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest
from temporalio import activity, workflow

import contracts
from activities.retention import RetentionActivities
from activities.turns import TurnActivities
from contracts import ActivityName, Contract, Scope, ToolCallInput, TurnInput, WorkflowName
from workflows import ALL_WORKFLOWS

REPO = Path(__file__).resolve().parents[2]
SCOPE = {"account_id": "a", "conversation_id": "c", "branch_id": "b"}


def test_a_payload_from_a_newer_version_with_an_extra_field_is_accepted() -> None:
    """Rolling deploy: an older worker must decode what a newer client sends."""
    sent = {"scope": {**SCOPE, "tenant_region": "eu"}, "participant_id": "p", "priority": "high"}
    turn = TurnInput.model_validate(sent)
    assert turn.scope == Scope(**SCOPE) and turn.participant_id == "p"
    assert ToolCallInput.model_validate_json('{"account_id":"a","tool_call_id":"t","lease":3}').tool_call_id == "t"


def test_a_missing_required_field_is_still_refused() -> None:
    with pytest.raises(ValueError, match="participant_id"):
        TurnInput.model_validate({"scope": SCOPE})


def test_payloads_are_immutable() -> None:
    turn = TurnInput(scope=Scope(**SCOPE), participant_id="p")
    with pytest.raises(ValueError):
        turn.participant_id = "q"  # type: ignore[misc]


def test_every_boundary_model_is_named_input_or_result() -> None:
    """``<Thing>Input`` / ``<Thing>Result``; Scope is a part of other payloads, TurnStatus a query's answer."""
    parts = {"Contract", "Scope", "TurnStatus"}
    models = [name for name in contracts.__all__
              if isinstance(getattr(contracts, name), type) and issubclass(getattr(contracts, name), Contract)]
    assert not [name for name in models if name not in parts and not name.endswith(("Input", "Result"))]


def _registered_activity_names() -> list[str]:
    methods = [getattr(cls, name) for cls in (TurnActivities, RetentionActivities) for name in dir(cls)]
    return [activity._Definition.from_callable(m).name for m in methods
            if callable(m) and activity._Definition.from_callable(m) is not None]


def test_the_worker_registers_every_activity_name_once() -> None:
    names = _registered_activity_names()
    assert sorted(names) == sorted(ActivityName) and len(names) == len(set(names))


def test_the_worker_registers_every_workflow_name_once() -> None:
    names = [workflow._Definition.from_class(cls).name for cls in ALL_WORKFLOWS]
    assert sorted(names) == sorted(WorkflowName) and len(names) == len(set(names))


def _string_literal_names(path: Path, calls: set[str]) -> list[str]:
    """Calls of ``calls`` whose first argument is a string literal instead of a contracts constant."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in calls
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found.append(f"{path.name}:{node.lineno} {node.func.attr}({node.args[0].value!r})")
    return found


def test_workflows_and_clients_name_activities_and_workflows_by_constant() -> None:
    calls = {"execute_activity", "start_activity", "start_workflow", "execute_workflow", "signal", "query",
             "ScheduleActionStartWorkflow"}
    paths = [*(REPO / "workflows").glob("*.py"), *(REPO / "dossier").rglob("*.py")]
    found = [hit for path in paths for hit in _string_literal_names(path, calls)]
    assert not found, "use contracts.ActivityName / WorkflowName / the signal and query constants:\n" + "\n".join(found)


def test_the_checker_sees_a_literal_name(tmp_path: Path) -> None:
    module = tmp_path / "probe.py"
    module.write_text('async def f():\n    await workflow.execute_activity("call_model", request)\n')
    assert _string_literal_names(module, {"execute_activity"}) == ["probe.py:2 execute_activity('call_model')"]
    module.write_text("async def f():\n    await workflow.execute_activity(ActivityName.CALL_MODEL, request)\n")
    assert _string_literal_names(module, {"execute_activity"}) == []


def test_workflow_signal_and_query_names_are_the_contract_constants() -> None:
    from workflows.turn import AgentTurnWorkflow

    source = inspect.getsource(AgentTurnWorkflow)
    assert "name=ANSWER_TOOL_SIGNAL" in source and "name=STATUS_QUERY" in source
    assert workflow._Definition.from_class(AgentTurnWorkflow).signals.keys() == {contracts.ANSWER_TOOL_SIGNAL}
    assert workflow._Definition.from_class(AgentTurnWorkflow).queries.keys() == {contracts.STATUS_QUERY}
