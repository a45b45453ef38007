"""Retention and account deletion: the activities, each one bounded, repeatable step.

``collect_retention`` applies the retention rules to one batch of one record
kind (:func:`store.retention.collect_batch`), or sweeps one batch of objects
whose writing call never settled successfully (kind ``object``:
:func:`store.object_sweep.sweep_unclaimed_batch`); ``plan_account_deletion`` and
``delete_account_step`` delete an account step by step
(:mod:`store.account_deletion`). Every activity is idempotent: a retry after
a killed worker repeats a step that finds its work done, or finishes it.

A batch heartbeats when it starts and every :data:`STEP_HEARTBEAT_SECONDS`
while it runs (even blocked on a row lock), and the workflows give it a short
heartbeat timeout (``workflows.retention.STEP_HEARTBEAT_TIMEOUT``): a batch
whose worker was killed is retried once its heartbeats stop, not when its whole
start-to-close runs out.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, TypeVar

from temporalio import activity
from temporalio.service import RPCError, RPCStatusCode

from activities.deps import GraphDeps
from activities.errors import sorted_failures
from activities.heartbeat import heartbeating as beat_while
from activities.ingest import memory_id_for
from contracts import (
    CONVERSATION_SEARCH_ATTRIBUTE,
    AccountDeletionStepInput,
    ActivityName,
    RetentionBatchInput,
    RetentionBatchResult,
)
from policy.retention import RecordKind
from store import account_deletion
from store.object_sweep import sweep_unclaimed_batch
from store.retention import collect_batch

T = TypeVar("T")

OBJECT_KIND = "object"
"""The batch kind of the unclaimed-object sweep (not a record kind with rules)."""

STEP_HEARTBEAT_SECONDS = 2.0
"""How often a running batch heartbeats (well inside the workflows' heartbeat timeout)."""

_QUERY_SAFE = re.compile(r"[A-Za-z0-9_.:-]+")

STOP_QUERY_CONVERSATIONS = 100
"""Conversations named in one visibility query of the deletion's ``stop`` step."""


async def heartbeating(step: Awaitable[T]) -> T:
    """Run one batch, heartbeating when it starts and every :data:`STEP_HEARTBEAT_SECONDS` while it runs."""
    return await beat_while(step, STEP_HEARTBEAT_SECONDS, at_start=True)


def forget_rendered(deps: GraphDeps) -> None:
    """Drop this worker's kept first-read texts (:attr:`GraphDeps.rendered`) once retention or a deletion
    removed raw results: a text is found only by its raw bytes' digest, so it was never served without them,
    but it is the result's content and must not outlive it in memory. Another worker's entries go by
    eviction (256 entries, least recently used first). The cache only saves re-rendering: emptying it costs
    one render per kept read on the next calls."""
    deps.rendered.clear()


@dataclass
class RetentionActivities:
    """The retention and deletion activities over the graph and the bucket."""

    deps: GraphDeps

    @activity.defn(name=ActivityName.COLLECT_RETENTION)
    @sorted_failures
    async def collect_retention(self, batch: RetentionBatchInput) -> RetentionBatchResult:
        """Apply the retention rules to one batch of one record kind (or sweep unclaimed objects)."""
        if batch.kind == OBJECT_KIND:
            done = await heartbeating(sweep_unclaimed_batch(
                self.deps.sessions, self.deps.artifacts, batch.now, after_id=batch.after_id, limit=batch.batch_size))
        else:
            done = await heartbeating(collect_batch(
                self.deps.sessions, self.deps.artifacts, RecordKind(batch.kind), batch.now,
                after_id=batch.after_id, limit=batch.batch_size, own_memory_id=memory_id_for))
        if done.actions:
            activity.logger.info("retention %s: %s", batch.kind, done.actions)
            if batch.kind == RecordKind.ARTIFACT.value:
                forget_rendered(self.deps)
        return RetentionBatchResult(last_id=done.last_id, done=done.done, scanned=done.scanned,
                                    actions=done.actions)

    @activity.defn(name=ActivityName.PLAN_ACCOUNT_DELETION)
    @sorted_failures
    async def plan_account_deletion(self, account_id: str) -> list[str]:
        """The steps of an account deletion, in order (recorded in the workflow's history)."""
        return account_deletion.deletion_plan()

    @activity.defn(name=ActivityName.DELETE_ACCOUNT_STEP)
    @sorted_failures
    async def delete_account_step(self, step: AccountDeletionStepInput) -> int:
        """Run one bounded step; returns rows or objects removed (fewer than the batch size: step done)."""
        return await heartbeating(self._delete_step(step))

    async def _delete_step(self, step: AccountDeletionStepInput) -> int:
        if step.step == account_deletion.STOP_STEP:
            stopped = await self._stop_workflows(step.account_id)
            if stopped:
                activity.logger.info("account deletion: terminated %d running workflow(s)", stopped)
            return 0  # counts no rows: the step is done in one call
        if step.step == account_deletion.OBJECTS_STEP:
            forget_rendered(self.deps)
            return await account_deletion.delete_objects(self.deps.artifacts, step.account_id, step.batch_size)
        async with self.deps.sessions() as session, session.begin():
            if step.step == account_deletion.MARK_STEP:
                await account_deletion.mark_deleting(session, step.account_id)
                return 0
            if step.step == account_deletion.TOMBSTONE_STEP:
                await account_deletion.write_tombstone(session, step.account_id, step.rows_deleted,
                                                       step.objects_deleted)
                return 0
            return await account_deletion.delete_rows(session, step.account_id, step.step, step.batch_size)

    async def _stop_workflows(self, account_id: str) -> int:
        """Terminate the account's running workflows (found by their conversation); returns how many.

        After the mark: a workflow started since cannot write either (its rows are refused), and one the
        visibility store does not list yet fails on its first write. Idempotent: a closed one is skipped.
        """
        async with self.deps.sessions() as session:
            conversations = await account_deletion.account_conversations(session, account_id)
        # An id that would need quoting in a visibility query is not named (the store's are UUIDs); its
        # workflows, if any, are fenced by the mark alone.
        conversations = [c for c in conversations if _QUERY_SAFE.fullmatch(c)]
        client = activity.client()
        stopped = 0
        for start in range(0, len(conversations), STOP_QUERY_CONVERSATIONS):
            names = ", ".join(f"'{conversation_id}'" for conversation_id in
                              conversations[start:start + STOP_QUERY_CONVERSATIONS])
            query = f"ExecutionStatus = 'Running' AND {CONVERSATION_SEARCH_ATTRIBUTE} IN ({names})"
            async for execution in client.list_workflows(query):
                try:
                    await client.get_workflow_handle(execution.id, run_id=execution.run_id).terminate(
                        reason="account deleted")
                    stopped += 1
                except RPCError as error:
                    if error.status != RPCStatusCode.NOT_FOUND:  # NOT_FOUND: it closed meanwhile
                        raise
        return stopped

    def all(self) -> list[Any]:
        """Every activity, for ``Worker(activities=...)``."""
        return [self.collect_retention, self.plan_account_deletion, self.delete_account_step]


__all__ = ["OBJECT_KIND", "STEP_HEARTBEAT_SECONDS", "RetentionActivities", "heartbeating"]
