"""The workflows' own logic on Temporal's time-skipping test server, with fake activities under the real names.

No database, no S3, no model: each fake records what the workflow asked for and answers from a script, so
a test says exactly which steps a turn takes, in which order, with which ids. Timers and retry back-offs
are skipped, so a deferred wait of a day or a child's timeout costs nothing. The end-to-end turns in
tests/integration/test_workflows.py prove the real wiring; these prove the decisions.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from temporalio import activity
from temporalio.client import WorkflowFailureError
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from contracts import (
    CONTEXT_TOO_LONG_ERROR,
    ActivityName,
    AnswerToolInput,
    AssembleInput,
    AssembleResult,
    CallModelInput,
    CheckpointInput,
    ModelRunInput,
    ModelStepResult,
    PromoteInput,
    PromoteResult,
    RuntimeKind,
    Scope,
    SubagentBatchInput,
    SubagentChildInput,
    ToolCallInput,
    ToolStepInput,
    ToolStepResult,
    TurnInput,
)
from dossier.services.process import find_binary
from workflows import ALL_WORKFLOWS, AgentTurnWorkflow, SubagentBatchWorkflow

SCOPE = Scope(account_id="acct", conversation_id="conv", branch_id="main")
QUEUE = "logic"

Step = Callable[[CallModelInput], ModelStepResult]
"""What the fake model does on one call, given the call."""


def answer(call: CallModelInput) -> ModelStepResult:
    return ModelStepResult(model_run_id=call.model_run_id, answered=True, message_id=f"msg-{call.model_run_id}")


def tools(*plans: ToolStepInput) -> Step:
    return lambda call: ModelStepResult(model_run_id=call.model_run_id, answered=False, tools=plans)


def refuse(budget: int) -> Step:
    """A provider refusing the context as too long for the model, naming the budget that fits."""
    def step(call: CallModelInput) -> ModelStepResult:
        raise ApplicationError("context too long", budget, type=CONTEXT_TOO_LONG_ERROR, non_retryable=True)
    return step


@dataclass
class FakeActivities:
    """Every turn activity under its real name, recording each call; the model follows ``script`` per participant."""

    script: dict[str, list[Step]] = field(default_factory=dict)
    failing_tools: set[str] = field(default_factory=set)
    """Tool call ids whose every attempt raises."""
    log: list[tuple[str, Any]] = field(default_factory=list)
    tool_attempts: dict[str, int] = field(default_factory=dict)

    def calls(self, name: ActivityName) -> list[Any]:
        return [value for step, value in self.log if step == name]

    def all(self) -> list[Callable[..., Any]]:
        @activity.defn(name=ActivityName.START_MODEL_RUN)
        async def start_model_run(run: ModelRunInput) -> str:
            self.log.append((ActivityName.START_MODEL_RUN, run))
            return run.model_run_id

        @activity.defn(name=ActivityName.ASSEMBLE_CONTEXT)
        async def assemble_context(request: AssembleInput) -> AssembleResult:
            self.log.append((ActivityName.ASSEMBLE_CONTEXT, request))
            return AssembleResult(assembly_id=request.assembly_id, legacy_tokens=100, assembled_tokens=40)

        @activity.defn(name=ActivityName.CALL_MODEL)
        async def call_model(call: CallModelInput) -> ModelStepResult:
            self.log.append((ActivityName.CALL_MODEL, call))
            return self.script[call.participant_id].pop(0)(call)

        @activity.defn(name=ActivityName.EXECUTE_TOOL)
        async def execute_tool(call: ToolCallInput) -> ToolStepResult:
            self.log.append((ActivityName.EXECUTE_TOOL, call))
            self.tool_attempts[call.tool_call_id] = self.tool_attempts.get(call.tool_call_id, 0) + 1
            if call.tool_call_id in self.failing_tools:
                raise RuntimeError(f"{call.tool_call_id} failed")
            return ToolStepResult(tool_call_id=call.tool_call_id, status="succeeded",
                                  artifact_id=f"art-{call.tool_call_id}", memory_id=f"mem-{call.tool_call_id}")

        @activity.defn(name=ActivityName.FINALIZE_TOOL_FAILURE)
        async def finalize_tool_failure(call: ToolCallInput) -> ToolStepResult:
            self.log.append((ActivityName.FINALIZE_TOOL_FAILURE, call))
            return ToolStepResult(tool_call_id=call.tool_call_id, status="failed",
                                  artifact_id=f"art-{call.tool_call_id}", memory_id=f"mem-{call.tool_call_id}")

        @activity.defn(name=ActivityName.CONFIRM_ANSWER)
        async def confirm_answer(call: ToolCallInput) -> None:
            self.log.append((ActivityName.CONFIRM_ANSWER, call))

        @activity.defn(name=ActivityName.WRITE_CHECKPOINT)
        async def write_checkpoint(checkpoint: CheckpointInput) -> str:
            self.log.append((ActivityName.WRITE_CHECKPOINT, checkpoint))
            return f"ckpt-{len(self.calls(ActivityName.WRITE_CHECKPOINT))}"

        @activity.defn(name=ActivityName.PROMOTE_CHILD)
        async def promote_child(promote: PromoteInput) -> PromoteResult:
            self.log.append((ActivityName.PROMOTE_CHILD, promote))
            return PromoteResult(memory_ids=(f"promoted-{promote.child_participant_id}",))

        return [start_model_run, assemble_context, call_model, execute_tool, finalize_tool_failure,
                confirm_answer, write_checkpoint, promote_child]


@pytest.fixture(scope="module")
async def env() -> AsyncIterator[WorkflowEnvironment]:
    environment = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=str(find_binary("temporal-test-server")), data_converter=pydantic_data_converter)
    try:
        yield environment
    finally:
        await environment.shutdown()


@pytest.fixture
def fakes() -> FakeActivities:
    return FakeActivities()


async def run(env: WorkflowEnvironment, fakes: FakeActivities, workflow: Any, request: Any,
              during: Callable[[Any], Any] | None = None) -> Any:
    """Start ``workflow`` on a worker with ``fakes``; ``during(handle)`` runs while it does."""
    queue = f"{QUEUE}-{uuid.uuid4()}"
    async with Worker(env.client, task_queue=queue, workflows=ALL_WORKFLOWS, activities=fakes.all(),
                      workflow_failure_exception_types=[Exception]):
        handle = await env.client.start_workflow(workflow, request, id=f"wf-{uuid.uuid4()}", task_queue=queue)
        if during is not None:
            await during(handle)
        return await handle.result()


def steps(fakes: FakeActivities) -> list[str]:
    return [str(name) for name, _ in fakes.log]


# ------------------------------------------------------------------------------------------------ the agent turn


async def test_a_turn_assembles_calls_runs_each_tool_and_stops_at_the_answer(env, fakes):
    fakes.script["p"] = [tools(ToolStepInput(tool_call_id="t1"), ToolStepInput(tool_call_id="t2")), answer]
    result = await run(env, fakes, AgentTurnWorkflow.run, TurnInput(scope=SCOPE, participant_id="p"))

    model_step = ["start_model_run", "assemble_context", "call_model"]
    assert steps(fakes) == [*model_step, "execute_tool", "execute_tool", *model_step]
    assert result.status == "answered" and result.tool_call_ids == ("t1", "t2")
    runs = [run.model_run_id for run in fakes.calls(ActivityName.START_MODEL_RUN)]
    assert result.model_run_ids == tuple(runs) and len(set(runs)) == 2
    assert result.message_id == f"msg-{runs[-1]}"
    # Each model call assembles under its own run and a fresh assembly id, and is called on that assembly.
    assemblies = fakes.calls(ActivityName.ASSEMBLE_CONTEXT)
    calls = fakes.calls(ActivityName.CALL_MODEL)
    assert [a.model_run_id for a in assemblies] == runs == [c.model_run_id for c in calls]
    assert [c.assembly_id for c in calls] == [a.assembly_id for a in assemblies]
    assert len({a.assembly_id for a in assemblies}) == 2


async def test_a_turn_that_never_answers_stops_at_max_rounds(env, fakes):
    fakes.script["p"] = [tools(ToolStepInput(tool_call_id=f"t{n}")) for n in range(3)]
    result = await run(env, fakes, AgentTurnWorkflow.run,
                       TurnInput(scope=SCOPE, participant_id="p", max_rounds=3))
    assert result.status == "max_rounds" and result.message_id is None
    assert len(fakes.calls(ActivityName.CALL_MODEL)) == 3 and result.tool_call_ids == ("t0", "t1", "t2")


async def test_a_tool_that_fails_every_attempt_is_captured_as_a_failed_result_and_the_turn_goes_on(env, fakes):
    fakes.failing_tools = {"bad"}
    fakes.script["p"] = [tools(ToolStepInput(tool_call_id="bad", max_attempts=3)), answer]
    result = await run(env, fakes, AgentTurnWorkflow.run, TurnInput(scope=SCOPE, participant_id="p"))
    assert fakes.tool_attempts["bad"] == 3
    assert [c.tool_call_id for c in fakes.calls(ActivityName.FINALIZE_TOOL_FAILURE)] == ["bad"]
    assert result.status == "answered" and result.tool_call_ids == ("bad",)


async def test_a_context_refused_as_too_long_is_reassembled_once_within_the_named_budget(env, fakes):
    fakes.script["p"] = [refuse(900), tools(ToolStepInput(tool_call_id="t1")), answer]
    result = await run(env, fakes, AgentTurnWorkflow.run,
                       TurnInput(scope=SCOPE, participant_id="p", token_budget=4000))

    assemblies = fakes.calls(ActivityName.ASSEMBLE_CONTEXT)
    assert [a.token_budget for a in assemblies] == [4000, 900, 900]  # the smaller budget stays for the turn
    refused_run = assemblies[0].model_run_id
    assert [a.reassembly_of_model_run_id for a in assemblies] == [None, refused_run, None]
    # The refused run is kept in the turn's runs beside the one that replaced it.
    assert result.model_run_ids[0] == refused_run and len(result.model_run_ids) == 3
    assert result.status == "answered"


async def test_a_context_refused_again_within_the_smaller_budget_fails_the_turn(env, fakes):
    fakes.script["p"] = [refuse(900), refuse(500)]
    with pytest.raises(WorkflowFailureError):
        await run(env, fakes, AgentTurnWorkflow.run, TurnInput(scope=SCOPE, participant_id="p"))
    assert len(fakes.calls(ActivityName.ASSEMBLE_CONTEXT)) == 2


async def test_a_deferred_tool_waits_durably_for_the_answer_and_confirms_it_reached_the_graph(env, fakes):
    fakes.script["p"] = [tools(ToolStepInput(tool_call_id="pick", deferred=True)), answer]

    async def answer_a_day_later(handle):
        for _ in range(100):
            status = await handle.query(AgentTurnWorkflow.status)
            if status.waiting_for_tool_call_ids:
                break
            await asyncio.sleep(0.05)
        assert status.waiting_for_tool_call_ids == ("pick",) and status.round == 1
        await env.sleep(timedelta(days=1))  # nothing runs meanwhile
        assert steps(fakes)[-1] == "call_model"
        await handle.signal(AgentTurnWorkflow.answer_tool, AnswerToolInput(tool_call_id="pick"))

    result = await run(env, fakes, AgentTurnWorkflow.run, TurnInput(scope=SCOPE, participant_id="p"),
                       during=answer_a_day_later)
    assert [c.tool_call_id for c in fakes.calls(ActivityName.CONFIRM_ANSWER)] == ["pick"]
    assert not fakes.calls(ActivityName.EXECUTE_TOOL)  # a deferred call is the human's, never executed
    assert result.status == "answered" and result.tool_call_ids == ("pick",)


async def test_a_long_turn_checkpoints_and_continues_as_new_carrying_ids_and_budget(env, fakes):
    fakes.script["p"] = [refuse(700), *(tools(ToolStepInput(tool_call_id=f"t{n}")) for n in range(5)), answer]
    result = await run(env, fakes, AgentTurnWorkflow.run,
                       TurnInput(scope=SCOPE, participant_id="p", rounds_per_run=2, token_budget=3000))

    # Six rounds (the refused call and its re-assembly are one round), a checkpoint after every second.
    checkpoints = fakes.calls(ActivityName.WRITE_CHECKPOINT)
    assert [c.kind for c in checkpoints] == ["tool_loop", "tool_loop"]
    # Each checkpoint names every model run so far; the first call after it restores from it, once.
    assert [len(c.model_run_ids) for c in checkpoints] == [3, 5]
    assert [a.checkpoint_id for a in fakes.calls(ActivityName.ASSEMBLE_CONTEXT)] == [
        None, None, None, "ckpt-1", None, "ckpt-2", None]
    # The budget the refusal lowered survives continue-as-new.
    assert {a.token_budget for a in fakes.calls(ActivityName.ASSEMBLE_CONTEXT)[1:]} == {700}
    assert result.status == "answered" and len(result.model_run_ids) == 7
    # Every call of the turn, not only the last run's: a subagent's promotion reads them.
    assert result.tool_call_ids == tuple(f"t{n}" for n in range(5))


# ------------------------------------------------------------------------------------------------ subagents


async def test_subagents_run_in_parallel_each_is_promoted_whatever_its_end_and_the_parent_resumes(env, fakes):
    max_rounds = TurnInput.model_fields["max_rounds"].default
    # child-b never answers, so its turn ends at max rounds; child-slow waits on a human who never answers,
    # so it times out (30 virtual seconds: the test server skips the wait).
    fakes.script = {"child-a": [tools(ToolStepInput(tool_call_id="a1")), answer],
                    "child-b": [tools(ToolStepInput(tool_call_id=f"b{n}")) for n in range(max_rounds)],
                    "child-slow": [tools(ToolStepInput(tool_call_id="never", deferred=True))],
                    "parent": [answer]}
    batch = SubagentBatchInput(
        scope=SCOPE, parent_participant_id="parent",
        children=(SubagentChildInput(participant_id="child-a"),
                  SubagentChildInput(participant_id="child-b"),
                  SubagentChildInput(participant_id="child-slow", timeout_seconds=30)))

    result = await run(env, fakes, SubagentBatchWorkflow.run, batch)

    by_child = {child.participant_id: child for child in result.children}
    assert {name: child.status for name, child in by_child.items()} == {
        "child-a": "succeeded", "child-b": "failed", "child-slow": "timed_out"}
    promotions = {p.child_participant_id: p for p in fakes.calls(ActivityName.PROMOTE_CHILD)}
    assert set(promotions) == {"child-a", "child-b", "child-slow"}
    assert promotions["child-a"].tool_call_ids == ("a1",) and promotions["child-a"].child_message_id
    # child-b continued as new after rounds_per_run calls; the calls before that are promoted too.
    assert promotions["child-b"].tool_call_ids == tuple(f"b{n}" for n in range(max_rounds))
    assert promotions["child-slow"].tool_call_ids == () and promotions["child-slow"].child_message_id is None
    assert by_child["child-a"].promoted_memory_ids == ("promoted-child-a",)
    # Children run as subagent_child turns; the parent resumes from the batch checkpoint, after every child.
    kinds = {a.participant_id: a.runtime_kind for a in fakes.calls(ActivityName.ASSEMBLE_CONTEXT)}
    assert kinds["child-a"] == RuntimeKind.SUBAGENT_CHILD and kinds["parent"] == RuntimeKind.PARENT_RESUME
    checkpoint = fakes.calls(ActivityName.WRITE_CHECKPOINT)[-1]
    assert checkpoint.kind == "subagent_batch" and len(checkpoint.children) == 3
    parent_assembly = next(a for a in fakes.calls(ActivityName.ASSEMBLE_CONTEXT) if a.participant_id == "parent")
    assert parent_assembly.checkpoint_id == result.checkpoint_id
    batch_checkpoint = next(index for index, (name, value) in enumerate(fakes.log)
                            if name == ActivityName.WRITE_CHECKPOINT and value.kind == "subagent_batch")
    assert batch_checkpoint > max(index for index, (name, _) in enumerate(fakes.log)
                                  if name == ActivityName.PROMOTE_CHILD)
    assert result.resume is not None and result.resume.status == "answered"


async def test_a_batch_without_resume_stops_at_the_checkpoint(env, fakes):
    fakes.script = {"child": [answer]}
    result = await run(env, fakes, SubagentBatchWorkflow.run, SubagentBatchInput(
        scope=SCOPE, parent_participant_id="parent", children=(SubagentChildInput(participant_id="child"),),
        resume=False))
    assert result.resume is None and result.checkpoint_id == "ckpt-1"
    assert {a.participant_id for a in fakes.calls(ActivityName.ASSEMBLE_CONTEXT)} == {"child"}


def test_the_fakes_cover_every_activity_the_turn_workflows_call():
    """A workflow calling a new activity would hang here on an unregistered name: fail loudly instead."""
    registered = {fn.__temporal_activity_definition.name for fn in FakeActivities().all()}
    retention = {ActivityName.WRITE_SCHEDULED_PROMPT, ActivityName.COLLECT_RETENTION,
                 ActivityName.PLAN_ACCOUNT_DELETION, ActivityName.DELETE_ACCOUNT_STEP}
    assert registered == {str(name) for name in ActivityName} - {str(name) for name in retention}
