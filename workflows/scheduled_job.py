"""Scheduled job: what a Temporal Schedule starts on every fire.

The job writes its prompt as a user message (idempotent per run), then runs
a normal agent turn with runtime kind ``scheduled_job``. The schedule's
payload carries ids and the short prompt only.
"""

from __future__ import annotations

from temporalio import workflow

from workflows.options import STEP_RETRY, STEP_TIMEOUT, child_id
from workflows.turn import AgentTurnWorkflow
from workflows.visibility import child_options, summary

with workflow.unsafe.imports_passed_through():
    from contracts import (
        ActivityName,
        RuntimeKind,
        ScheduledJobInput,
        ScheduledPromptInput,
        TurnInput,
        TurnResult,
        WorkflowName,
    )


@workflow.defn(name=WorkflowName.SCHEDULED_JOB)
class ScheduledJobWorkflow:
    """What a Temporal Schedule starts: write the job's prompt, then a normal agent turn."""

    @workflow.run
    async def run(self, job: ScheduledJobInput) -> TurnResult:
        await workflow.execute_activity(
            ActivityName.WRITE_SCHEDULED_PROMPT,
            ScheduledPromptInput(scope=job.scope, job_name=job.job_name, prompt=job.prompt, fired_at=workflow.now()),
            start_to_close_timeout=STEP_TIMEOUT, retry_policy=STEP_RETRY, result_type=str,
            summary=summary("write scheduled prompt", RuntimeKind.SCHEDULED_JOB.value),
        )
        return await workflow.execute_child_workflow(
            AgentTurnWorkflow.run,
            TurnInput(scope=job.scope, participant_id=job.participant_id, runtime_kind=RuntimeKind.SCHEDULED_JOB,
                      model_timeout_seconds=job.model_timeout_seconds),
            id=child_id("turn"),
            **child_options(job.scope, RuntimeKind.SCHEDULED_JOB, job.participant_id, "agent turn"),
        )
