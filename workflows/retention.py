"""Retention and account deletion: orchestration of bounded, idempotent activities.

``RetentionWorkflow`` is what the retention Temporal Schedule starts: for each
record kind (artifacts, memories, assembly traces) it walks the rows in id
order, one batch per activity, applying the rules at one logical ``now``; then
it sweeps the objects tool calls wrote that no succeeded result claimed, past
their grace period (``object``, behind :data:`OBJECT_SWEEP_PATCH`).

``DeleteAccountWorkflow`` runs the steps of
:func:`store.account_deletion.deletion_plan`, each repeated until it removes
fewer rows or objects than a batch; its id is derived from the account id
(:func:`deletion_workflow_id`), so a second start finds the first. A worker
killed mid-step loses nothing: the step's activity is retried on another
worker and finds its work done or finishes it. Both continue as new before
their histories grow long, carrying their totals.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from contracts import (
        AccountDeletionInput,
        AccountDeletionResult,
        AccountDeletionStepInput,
        ActivityName,
        RetentionBatchInput,
        RetentionBatchResult,
        RetentionRunInput,
        RetentionRunResult,
        WorkflowName,
    )

RETENTION_STEP_TIMEOUT = timedelta(seconds=30)
"""Start-to-close of one batch: the longest a batch may run (a killed worker's batch is retried sooner, once its
heartbeats stop: :data:`STEP_HEARTBEAT_TIMEOUT`)."""

STEP_HEARTBEAT_TIMEOUT = timedelta(seconds=10)
"""A batch heartbeats every couple of seconds (``activities.retention.STEP_HEARTBEAT_SECONDS``): one whose
worker was killed is retried once its heartbeats have stopped for this long."""

RETENTION_RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=200), backoff_coefficient=2.0,
                              maximum_interval=timedelta(seconds=30), maximum_attempts=12)
"""Steps are idempotent: a killed worker's or a failed step is retried (for about four minutes) before
the run fails and says why."""

KINDS = ("artifact", "memory", "trace")
"""Artifacts first: deleting one marks its memories before the memories' own rules run."""

OBJECT_KIND = "object"
"""The unclaimed-object sweep, after the record kinds."""

OBJECT_SWEEP_PATCH = "retention-object-sweep"
"""Runs started before the sweep existed replay without it."""

HISTORY_STEPS = 500
"""Activities per deletion run before continuing as new."""

# Step names of store.account_deletion.deletion_plan (workflows do not import the store).
OBJECTS_STEP = "objects"
TOMBSTONE_STEP = "tombstone"
UNLINK_PREFIX = "unlink:"


def deletion_workflow_id(account_id: str) -> str:
    """The one workflow id of an account's deletion."""
    return f"delete-account-{account_id}"


@workflow.defn(name=WorkflowName.RETENTION)
class RetentionWorkflow:
    """Apply every retention rule once, at one logical time."""

    @workflow.run
    async def run(self, run: RetentionRunInput) -> RetentionRunResult:
        now = run.now or workflow.now()
        totals: dict[str, int] = {}
        kinds = (*KINDS, OBJECT_KIND) if workflow.patched(OBJECT_SWEEP_PATCH) else KINDS
        for kind in kinds:
            after: str | None = None
            while True:
                batch: RetentionBatchResult = await workflow.execute_activity(
                    ActivityName.COLLECT_RETENTION,
                    RetentionBatchInput(kind=kind, now=now, after_id=after, batch_size=run.batch_size),
                    start_to_close_timeout=RETENTION_STEP_TIMEOUT, heartbeat_timeout=STEP_HEARTBEAT_TIMEOUT,
                    retry_policy=RETENTION_RETRY, result_type=RetentionBatchResult)
                for action, count in batch.actions.items():
                    totals[f"{kind}:{action}"] = totals.get(f"{kind}:{action}", 0) + count
                after = batch.last_id
                if batch.done:
                    break
        return RetentionRunResult(now=now, actions=totals)


@workflow.defn(name=WorkflowName.DELETE_ACCOUNT)
class DeleteAccountWorkflow:
    """Delete every row and every object of one account, then leave a tombstone."""

    @workflow.run
    async def run(self, request: AccountDeletionInput) -> AccountDeletionResult:
        plan = request.plan
        if plan is None:
            plan = await workflow.execute_activity(
                ActivityName.PLAN_ACCOUNT_DELETION, request.account_id,
                start_to_close_timeout=RETENTION_STEP_TIMEOUT, retry_policy=RETENTION_RETRY, result_type=list[str])
        rows, objects, calls = request.rows_deleted, request.objects_deleted, 0
        for index, step in enumerate(plan):
            while True:
                if calls >= HISTORY_STEPS:  # a large account: keep the history short, carry the totals
                    workflow.continue_as_new(request.model_copy(update={
                        "plan": plan[index:], "rows_deleted": rows, "objects_deleted": objects}))
                calls += 1
                removed: int = await workflow.execute_activity(
                    ActivityName.DELETE_ACCOUNT_STEP,
                    AccountDeletionStepInput(account_id=request.account_id, step=step, batch_size=request.batch_size,
                                             rows_deleted=rows, objects_deleted=objects),
                    start_to_close_timeout=RETENTION_STEP_TIMEOUT, heartbeat_timeout=STEP_HEARTBEAT_TIMEOUT,
                    retry_policy=RETENTION_RETRY, result_type=int)
                if step == OBJECTS_STEP:
                    objects += removed
                elif not step.startswith(UNLINK_PREFIX):
                    rows += removed
                if removed < request.batch_size or step == TOMBSTONE_STEP:
                    break
        return AccountDeletionResult(rows_deleted=rows, objects_deleted=objects)

__all__ = ["DeleteAccountWorkflow", "RetentionWorkflow", "deletion_workflow_id"]
