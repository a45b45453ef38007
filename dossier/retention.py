"""Retention runs and account deletion, from the client side.

* :func:`ensure_retention_schedule`: the garbage-collection Temporal Schedule
  (``retention-<task queue>``, daily by default), created once; a second call
  finds it. The worker calls it at start.
* :func:`run_retention`: fire that schedule now and wait for its run (what
  ``dossier retention run`` does), or, given a logical ``now``, run the
  collection directly at that time.
* :func:`delete_account`: start (or find) the account's deletion workflow,
  whose id is derived from the account id, and wait for it.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime, timedelta

from sqlalchemy import select
from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleIntervalSpec,
    ScheduleSpec,
    ScheduleState,
    WorkflowExecutionStatus,
    WorkflowHandle,
)
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.service import RPCError

from activities.deps import GraphDeps
from contracts import (
    AccountDeletionInput,
    AccountDeletionResult,
    RetentionRunInput,
    RetentionRunResult,
    WorkflowName,
)
from store.models import Account
from workflows.retention import deletion_workflow_id

RETENTION_EVERY = timedelta(days=1)
"""How often the retention schedule fires by default."""


class RetentionError(Exception):
    """A retention or deletion request that cannot be carried out (an unknown account, a schedule that never fired)."""


def retention_schedule_id(task_queue: str) -> str:
    """The retention schedule of a task queue's workers."""
    return f"retention-{task_queue}"


async def ensure_retention_schedule(temporal: Client, task_queue: str, *, every: timedelta = RETENTION_EVERY) -> str:
    """Create the retention schedule unless it exists (idempotent; safe from several workers at once).
    """
    schedule_id = retention_schedule_id(task_queue)
    try:
        await temporal.create_schedule(schedule_id, Schedule(
            action=ScheduleActionStartWorkflow(WorkflowName.RETENTION, RetentionRunInput(), id=schedule_id,
                                               task_queue=task_queue),
            spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=every)]),
            state=ScheduleState(note="dossier retention: garbage collection of artifacts, memories and traces"),
        ))
    except ScheduleAlreadyRunningError:
        pass
    return schedule_id


async def run_retention(temporal: Client, task_queue: str, *, now: datetime | None = None,
                        batch_size: int = 200, timeout: float = 300.0) -> RetentionRunResult:
    """Collect now and wait for the result.

    Args:
        task_queue: the workers' task queue.
        now: a logical time to apply the rules at (the schedule is bypassed); ``None``: trigger the schedule.
        batch_size: rows per activity (direct runs only; the schedule's runs use the default).
        timeout: seconds to wait for the schedule to fire.

    Returns:
        Rows per ``kind:action``.

    Raises:
        RetentionError: the schedule did not fire in time.
    """
    if now is not None:
        return await temporal.execute_workflow(
            WorkflowName.RETENTION, RetentionRunInput(now=now, batch_size=batch_size),
            id=f"retention-run-{uuid.uuid4()}", task_queue=task_queue, result_type=RetentionRunResult)
    schedule_id = await ensure_retention_schedule(temporal, task_queue)
    handle = temporal.get_schedule_handle(schedule_id)
    before = len((await handle.describe()).info.recent_actions)
    await handle.trigger()
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        actions = (await handle.describe()).info.recent_actions
        if len(actions) > before:
            workflow_id = actions[-1].action.workflow_id
            break
        if asyncio.get_running_loop().time() > deadline:
            raise RetentionError(f"schedule {schedule_id} did not fire within {timeout:.0f}s")
        await asyncio.sleep(0.25)
    return await temporal.get_workflow_handle(workflow_id, result_type=RetentionRunResult).result()


async def start_account_deletion(temporal: Client, deps: GraphDeps, task_queue: str, account_id: str, *,
                                 batch_size: int = 500) -> WorkflowHandle[object, AccountDeletionResult]:
    """Start the account's deletion, or find the one already running (same workflow id).

    Raises:
        RetentionError: no such account (and no deletion of it running).
    """
    async with deps.sessions() as session:
        exists = await session.scalar(select(Account.id).where(Account.id == account_id))
    workflow_id = deletion_workflow_id(account_id)
    if exists is None:
        handle = temporal.get_workflow_handle(workflow_id, result_type=AccountDeletionResult)
        try:
            running = (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
        except RPCError:  # an unknown workflow id: nothing is running
            running = False
        if not running:
            raise RetentionError(f"no account {account_id!r}")
        return handle
    return await temporal.start_workflow(
        WorkflowName.DELETE_ACCOUNT, AccountDeletionInput(account_id=account_id, batch_size=batch_size),
        id=workflow_id, task_queue=task_queue, result_type=AccountDeletionResult,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING)


async def delete_account(temporal: Client, deps: GraphDeps, task_queue: str, account_id: str, *,
                         batch_size: int = 500) -> AccountDeletionResult:
    """Delete every row and object of an account and wait until it is done (see :func:`start_account_deletion`)."""
    handle = await start_account_deletion(temporal, deps, task_queue, account_id, batch_size=batch_size)
    return await handle.result()


__all__ = [
    "RETENTION_EVERY",
    "RetentionError",
    "delete_account",
    "ensure_retention_schedule",
    "retention_schedule_id",
    "run_retention",
    "start_account_deletion",
]
