"""Runtime modes built from agent turns: multi-model, subagent batch, parent resume, discussion, scheduled job.

Each mode starts :class:`~workflows.turn.AgentTurnWorkflow` children with the
right runtime kind, so every model call in every mode goes through the same
assemble → call → capture path, and each child shows up on its own in the
Temporal UI under its parent.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ChildWorkflowError, TimeoutError

from workflows.turn import STEP_RETRY, STEP_TIMEOUT, AgentTurnWorkflow

with workflow.unsafe.imports_passed_through():
    from contracts import (
        CheckpointInput,
        ChildOutcome,
        ChildTask,
        DiscussionInput,
        DiscussionResult,
        MultiModelInput,
        MultiModelResult,
        ParentResumeInput,
        PromoteInput,
        PromoteResult,
        ScheduledJobInput,
        ScheduledPromptInput,
        SubagentBatchInput,
        SubagentBatchResult,
        TurnInput,
        TurnResult,
    )
    from policy.enums import RuntimeKind


def _child_id(suffix: str) -> str:
    return f"{workflow.info().workflow_id}/{suffix}"


@workflow.defn(name="MultiModelTurn")
class MultiModelTurnWorkflow:
    """N participants answer the same user message in parallel, tool state private to each."""

    @workflow.run
    async def run(self, request: MultiModelInput) -> MultiModelResult:
        turns = [
            workflow.execute_child_workflow(
                AgentTurnWorkflow.run,
                TurnInput(scope=request.scope, participant_id=participant_id, runtime_kind=RuntimeKind.MULTI_MODEL,
                          token_budget=request.token_budget),
                id=_child_id(f"model-{index}"),
            )
            for index, participant_id in enumerate(request.participant_ids)
        ]
        return MultiModelResult(results=tuple(await asyncio.gather(*turns)))


@workflow.defn(name="SubagentBatch")
class SubagentBatchWorkflow:
    """Children run in parallel; each one's report, files and failures are promoted; the parent resumes."""

    @workflow.run
    async def run(self, batch: SubagentBatchInput) -> SubagentBatchResult:
        outcomes = await asyncio.gather(*(self._child(batch, task) for task in batch.children))
        checkpoint_id = await workflow.execute_activity(
            "write_checkpoint",
            CheckpointInput(scope=batch.scope, participant_id=batch.parent_participant_id, kind="subagent_batch",
                            children=tuple(outcomes), next_step=batch.next_step),
            start_to_close_timeout=STEP_TIMEOUT, retry_policy=STEP_RETRY, result_type=str,
        )
        resume = None
        if batch.resume:
            resume = await workflow.execute_child_workflow(
                ParentResumeWorkflow.run,
                ParentResumeInput(scope=batch.scope, parent_participant_id=batch.parent_participant_id,
                                  checkpoint_id=checkpoint_id),
                id=_child_id("resume"),
            )
        return SubagentBatchResult(children=tuple(outcomes), checkpoint_id=checkpoint_id, resume=resume)

    async def _child(self, batch: SubagentBatchInput, task: ChildTask) -> ChildOutcome:
        child_id = _child_id(f"child-{task.participant_id}")
        result: TurnResult | None = None
        try:
            result = await workflow.execute_child_workflow(
                AgentTurnWorkflow.run,
                TurnInput(scope=batch.scope, participant_id=task.participant_id,
                          runtime_kind=RuntimeKind.SUBAGENT_CHILD),
                id=child_id,
                execution_timeout=timedelta(seconds=task.timeout_seconds),
            )
            status = "succeeded" if result.status == "answered" else "failed"
        except ChildWorkflowError as error:
            status = "timed_out" if isinstance(error.cause, TimeoutError) else "failed"
        # Promotion is the only way anything of the child reaches the parent.
        promoted: PromoteResult = await workflow.execute_activity(
            "promote_child",
            PromoteInput(scope=batch.scope, child_participant_id=task.participant_id,
                         parent_participant_id=batch.parent_participant_id, outcome=status,
                         child_message_id=result.message_id if result else None,
                         tool_call_ids=result.tool_call_ids if result else ()),
            start_to_close_timeout=STEP_TIMEOUT, retry_policy=STEP_RETRY, result_type=PromoteResult,
        )
        return ChildOutcome(participant_id=task.participant_id, status=status,
                            promoted_memory_ids=promoted.memory_ids, workflow_id=child_id)


@workflow.defn(name="ParentResume")
class ParentResumeWorkflow:
    """The parent's turn after its subagents: restored from the checkpoint, never from raw child state."""

    @workflow.run
    async def run(self, request: ParentResumeInput) -> TurnResult:
        return await workflow.execute_child_workflow(
            AgentTurnWorkflow.run,
            TurnInput(scope=request.scope, participant_id=request.parent_participant_id,
                      runtime_kind=RuntimeKind.PARENT_RESUME, checkpoint_id=request.checkpoint_id,
                      token_budget=request.token_budget),
            id=_child_id("turn"),
        )


@workflow.defn(name="Discussion")
class DiscussionWorkflow:
    """Participants take turns for a number of rounds under the moderator's opening message."""

    @workflow.run
    async def run(self, request: DiscussionInput) -> DiscussionResult:
        turns: list[TurnResult] = []
        for round_ in range(request.rounds):
            for index, participant_id in enumerate(request.participant_ids):
                turns.append(await workflow.execute_child_workflow(
                    AgentTurnWorkflow.run,
                    TurnInput(scope=request.scope, participant_id=participant_id,
                              runtime_kind=RuntimeKind.DISCUSSION, token_budget=request.token_budget),
                    id=_child_id(f"round-{round_}-speaker-{index}"),
                ))
        return DiscussionResult(turns=tuple(turns))


@workflow.defn(name="ScheduledJob")
class ScheduledJobWorkflow:
    """What a Temporal Schedule starts: write the job's prompt, then a normal agent turn."""

    @workflow.run
    async def run(self, job: ScheduledJobInput) -> TurnResult:
        await workflow.execute_activity(
            "write_scheduled_prompt",
            ScheduledPromptInput(scope=job.scope, job_name=job.job_name, prompt=job.prompt, fired_at=workflow.now()),
            start_to_close_timeout=STEP_TIMEOUT, retry_policy=STEP_RETRY, result_type=str,
        )
        return await workflow.execute_child_workflow(
            AgentTurnWorkflow.run,
            TurnInput(scope=job.scope, participant_id=job.participant_id, runtime_kind=RuntimeKind.SCHEDULED_JOB),
            id=_child_id("turn"),
        )
