"""Subagent batch: children run in parallel, only their promoted results reach the parent, which resumes.

Each child is an :class:`~workflows.turn.AgentTurnWorkflow` with runtime kind
``subagent_child`` and its own execution timeout. When a child ends (answered,
failed or timed out) the ``promote_child`` activity releases its report, the
handles of files it generated and its failures to the parent; nothing else of
the child's workspace ever reaches the parent. A ``subagent_batch`` checkpoint
records the outcomes, and :class:`~workflows.parent_resume.ParentResumeWorkflow`
resumes the parent from it.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ChildWorkflowError, TimeoutError

from workflows.options import STEP_RETRY, STEP_TIMEOUT, child_id
from workflows.parent_resume import ParentResumeWorkflow
from workflows.turn import AgentTurnWorkflow
from workflows.visibility import child_options, summary

with workflow.unsafe.imports_passed_through():
    from contracts import (
        ActivityName,
        CheckpointInput,
        ParentResumeInput,
        PromoteInput,
        PromoteResult,
        RuntimeKind,
        SubagentBatchInput,
        SubagentBatchResult,
        SubagentChildInput,
        SubagentChildResult,
        TurnInput,
        TurnResult,
        WorkflowName,
    )


@workflow.defn(name=WorkflowName.SUBAGENT_BATCH)
class SubagentBatchWorkflow:
    """Children run in parallel; each one's report, files and failures are promoted; the parent resumes."""

    @workflow.run
    async def run(self, batch: SubagentBatchInput) -> SubagentBatchResult:
        outcomes = await asyncio.gather(*(self._child(batch, task, index) for index, task in enumerate(batch.children)))
        checkpoint_id = await workflow.execute_activity(
            ActivityName.WRITE_CHECKPOINT,
            CheckpointInput(scope=batch.scope, participant_id=batch.parent_participant_id, kind="subagent_batch",
                            children=tuple(outcomes), next_step=batch.next_step),
            start_to_close_timeout=STEP_TIMEOUT, retry_policy=STEP_RETRY, result_type=str,
            summary=summary("write checkpoint", "subagent_batch", f"{len(outcomes)} children"),
        )
        resume = None
        if batch.resume:
            resume = await workflow.execute_child_workflow(
                ParentResumeWorkflow.run,
                ParentResumeInput(scope=batch.scope, parent_participant_id=batch.parent_participant_id,
                                  checkpoint_id=checkpoint_id, model_timeout_seconds=batch.model_timeout_seconds),
                id=child_id("resume"),
                **child_options(batch.scope, RuntimeKind.PARENT_RESUME, batch.parent_participant_id, "parent resume",
                                f"{len(outcomes)} children"),
            )
        return SubagentBatchResult(children=tuple(outcomes), checkpoint_id=checkpoint_id, resume=resume)

    async def _child(self, batch: SubagentBatchInput, task: SubagentChildInput, index: int) -> SubagentChildResult:
        workflow_id = child_id(f"child-{task.participant_id}")
        result: TurnResult | None = None
        try:
            result = await workflow.execute_child_workflow(
                AgentTurnWorkflow.run,
                TurnInput(scope=batch.scope, participant_id=task.participant_id,
                          runtime_kind=RuntimeKind.SUBAGENT_CHILD, model_timeout_seconds=batch.model_timeout_seconds),
                id=workflow_id,
                execution_timeout=timedelta(seconds=task.timeout_seconds),
                **child_options(batch.scope, RuntimeKind.SUBAGENT_CHILD, task.participant_id, "agent turn",
                                f"subagent {index + 1} of {len(batch.children)}"),
            )
            status = "succeeded" if result.status == "answered" else "failed"
        except ChildWorkflowError as error:
            status = "timed_out" if isinstance(error.cause, TimeoutError) else "failed"
            workflow.logger.warning("subagent %s ended %s: %s", task.participant_id, status, error.cause)
        # Promotion is the only way anything of the child reaches the parent.
        promoted: PromoteResult = await workflow.execute_activity(
            ActivityName.PROMOTE_CHILD,
            PromoteInput(scope=batch.scope, child_participant_id=task.participant_id,
                         parent_participant_id=batch.parent_participant_id, outcome=status,
                         child_message_id=result.message_id if result else None,
                         tool_call_ids=result.tool_call_ids if result else ()),
            start_to_close_timeout=STEP_TIMEOUT, retry_policy=STEP_RETRY, result_type=PromoteResult,
            summary=summary("promote child", RuntimeKind.SUBAGENT_CHILD.value, status,
                            f"{len(result.tool_call_ids) if result else 0} tool calls"),
        )
        return SubagentChildResult(participant_id=task.participant_id, status=status,
                                   promoted_memory_ids=promoted.memory_ids, workflow_id=workflow_id)
