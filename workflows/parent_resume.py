"""Parent resume: the parent's turn after its subagents, restored from a checkpoint.

The turn runs with runtime kind ``parent_resume`` and the batch's checkpoint
id; its first context records the restore as a policy decision and shows the
promoted results, never the children's raw state.
"""

from __future__ import annotations

from temporalio import workflow

from workflows.options import child_id
from workflows.turn import AgentTurnWorkflow
from workflows.visibility import child_options

with workflow.unsafe.imports_passed_through():
    from contracts import ParentResumeInput, RuntimeKind, TurnInput, TurnResult, WorkflowName


@workflow.defn(name=WorkflowName.PARENT_RESUME)
class ParentResumeWorkflow:
    """The parent's turn after its subagents: restored from the checkpoint, never from raw child state."""

    @workflow.run
    async def run(self, request: ParentResumeInput) -> TurnResult:
        return await workflow.execute_child_workflow(
            AgentTurnWorkflow.run,
            TurnInput(scope=request.scope, participant_id=request.parent_participant_id,
                      runtime_kind=RuntimeKind.PARENT_RESUME, checkpoint_id=request.checkpoint_id,
                      token_budget=request.token_budget, model_timeout_seconds=request.model_timeout_seconds),
            id=child_id("turn"),
            **child_options(request.scope, RuntimeKind.PARENT_RESUME, request.parent_participant_id, "agent turn",
                            "restored from a checkpoint"),
        )
