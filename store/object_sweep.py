"""The sweep of unclaimed objects: writes whose call never settled successfully, after a grace period.

A stored-object row stays ``pending`` (:mod:`store.objects`) when the attempt
that put its bytes did not end in a captured, succeeded result referring to
them: the call failed for good after the put, a retry wrote other bytes, the
run was cancelled or its call never settled. Once its ``written_at`` is older
than :data:`policy.retention.UNCLAIMED_OBJECT_GRACE` (as the retention run's
logical ``now`` sees it), one batch at a time, in id order from a cursor:

* under the key's lock (:func:`store.objects.object_lock`) the row is read
  again, and left alone if a write touched or claimed it since;
* the object is deleted when no other row refers to the key
  (:func:`store.retention.object_still_needed`: content addressing shares a key
  between calls writing the same bytes);
* then the row is deleted, in the same transaction, so a crash in between
  leaves a row naming a missing object, which the next run finishes.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, select

from policy.retention import UNCLAIMED_OBJECT_GRACE, unclaimed_object_due
from store._sql import translate_errors
from store.artifacts import ArtifactStore
from store.models import ObjectState, StoredObject
from store.objects import object_lock
from store.retention import RetentionBatch, object_still_needed


@translate_errors
async def sweep_unclaimed_batch(sessions: Any, artifacts: ArtifactStore, now: datetime, *,
                                after_id: str | None = None, limit: int = 200,
                                grace: timedelta = UNCLAIMED_OBJECT_GRACE) -> RetentionBatch:
    """Sweep at most ``limit`` unclaimed stored objects past the grace period, across accounts.

    Args:
        sessions: the session factory (each row in its own short transaction).
        artifacts: the artifact store.
        now: the collection's logical time.
        after_id: the cursor (``None``: from the start).
        grace: how long an unclaimed object is left alone.

    Returns:
        What the batch did (``swept_object``: row and bytes; ``swept_row``: the row only, another
        row still needs the bytes; ``kept``: written or claimed since the batch was read), and the cursor.
    """
    query = select(StoredObject.id, StoredObject.account_id, StoredObject.key).where(
        StoredObject.state == ObjectState.PENDING.value, StoredObject.written_at <= now - grace,
    ).order_by(StoredObject.id).limit(limit)
    if after_id is not None:
        query = query.where(StoredObject.id > after_id)
    async with sessions() as session:
        rows = (await session.execute(query)).all()
    actions: Counter[str] = Counter()
    for row in rows:
        actions[await _sweep_one(sessions, artifacts, now, grace, account_id=row.account_id, row_id=row.id,
                                 key=row.key)] += 1
    return RetentionBatch(last_id=rows[-1].id if rows else after_id, scanned=len(rows), done=len(rows) < limit,
                          actions=dict(actions))


async def _sweep_one(sessions: Any, artifacts: ArtifactStore, now: datetime, grace: timedelta, *, account_id: str,
                     row_id: str, key: str) -> str:
    async with sessions() as session, session.begin():
        await object_lock(session, key)
        current = (await session.execute(select(StoredObject.state, StoredObject.written_at).where(
            StoredObject.account_id == account_id, StoredObject.id == row_id))).first()
        if current is None:
            return "gone"
        if current.state != ObjectState.PENDING.value or not unclaimed_object_due(current.written_at, now, grace):
            return "kept"
        needed = await object_still_needed(session, artifacts, account_id, key, except_artifact=None,
                                           except_object_row=row_id)
        if not needed:
            await artifacts.delete(account_id, key)
        await session.execute(delete(StoredObject).where(
            StoredObject.account_id == account_id, StoredObject.id == row_id))
    return "swept_row" if needed else "swept_object"


__all__ = ["sweep_unclaimed_batch"]
