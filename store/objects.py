"""Stored objects: record an object before it is put, claim it when a succeeded result refers to it.

The order that keeps the bucket known to the graph, for every object a tool
call writes under ``accounts/<account>/sha256/<hex>``:

1. :func:`record_object` commits a ``pending`` row (account, tool call, key,
   sha256, size, privacy) *before* the put; a retried attempt writing the same
   bytes refreshes its ``written_at``;
2. the put;
3. the capture of the call's succeeded result :func:`claim_objects` the rows it
   refers to, in the artifact's own transaction.

A put whose attempt then fails (the call captured as failed, cancelled, or
never settled) leaves a pending row: the retention sweep
(:func:`store.object_sweep.sweep_unclaimed_batch`) removes it after a grace
period, with its object when no other row needs the key. Every step on a key
that may end in deleting its object holds :func:`object_lock` on the key, as do
the record and the claim, so a sweep never deletes bytes a concurrent write has
just recorded (it sees the fresh row, or the writer waits and puts again).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence

from sqlalchemy import delete, func, select, text
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from policy.enums import PrivacyClass
from store._sql import translate_errors
from store.artifacts import ObjectRef
from store.errors import NotFoundError
from store.models import ObjectState, StoredObject, ToolCall


def _lock_id(key: str) -> int:
    """A signed 64-bit advisory lock id for an object key."""
    return int.from_bytes(hashlib.sha256(f"dossier-object:{key}".encode()).digest()[:8], "big", signed=True)


async def object_lock(session: AsyncSession, key: str) -> None:
    """Hold the key's advisory lock until the caller's transaction ends (record, claim, and any delete of it)."""
    await session.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": _lock_id(key)})


@translate_errors
async def record_object(session: AsyncSession, account_id: str, tool_call_id: str, ref: ObjectRef,
                        privacy: PrivacyClass | None = None) -> None:
    """Record, before the put, that a tool call writes ``ref`` (commit before uploading).

    Idempotent per (call, key): a retried attempt refreshes ``written_at`` and keeps the state.

    Args:
        account_id: the owning account (the key must be under its prefix).
        tool_call_id: the call whose attempt writes it.
        ref: the object about to be put.
        privacy: its privacy class (``None``: the call's).

    Raises:
        NotFoundError: no such tool call in the account, or a key outside the account's prefix.
    """
    if not ref.key.startswith(f"accounts/{account_id}/"):
        raise NotFoundError("object", ref.key)
    await object_lock(session, ref.key)
    call = (await session.execute(select(ToolCall.conversation_id, ToolCall.privacy).where(
        ToolCall.account_id == account_id, ToolCall.id == tool_call_id))).first()
    if call is None:
        raise NotFoundError("tool_call", tool_call_id)
    await session.execute(insert(StoredObject).values(
        id=str(uuid.uuid4()), account_id=account_id, conversation_id=call.conversation_id,
        tool_call_id=tool_call_id, key=ref.key, sha256=ref.sha256, size=ref.size, content_type=ref.content_type,
        privacy=PrivacyClass(privacy or call.privacy).value, state=ObjectState.PENDING.value,
    ).on_conflict_do_update(index_elements=["account_id", "tool_call_id", "key"],
                            set_={"written_at": func.now()}))


@translate_errors
async def claim_objects(session: AsyncSession, account_id: str, tool_call_id: str, refs: Sequence[ObjectRef],
                        privacy: PrivacyClass | None = None) -> None:
    """Mark the objects a call's succeeded result refers to as claimed (in the capture's transaction).

    A row recorded before the put is claimed; one that is missing (a caller that put without
    recording, such as a direct :func:`store.payloads.capture_artifact`) is written claimed.

    Args:
        refs: the objects its result refers to.
        privacy: their privacy class for a row written here (``None``: the call's).
    """
    for ref in sorted(refs, key=lambda r: r.key):  # one lock order: no deadlock between two claims
        await record_object(session, account_id, tool_call_id, ref, privacy)
        await session.execute(StoredObject.__table__.update().where(
            StoredObject.account_id == account_id, StoredObject.tool_call_id == tool_call_id,
            StoredObject.key == ref.key).values(state=ObjectState.CLAIMED.value))


async def rows_naming(session: AsyncSession, account_id: str, key: str, *, except_tool_call: str | None = None,
                      except_row: str | None = None) -> int:
    """How many stored-object rows (any state) name ``key``, leaving out one call's or one row."""
    query = select(func.count()).select_from(StoredObject).where(
        StoredObject.account_id == account_id, StoredObject.key == key)
    if except_tool_call is not None:
        query = query.where(StoredObject.tool_call_id != except_tool_call)
    if except_row is not None:
        query = query.where(StoredObject.id != except_row)
    return int(await session.scalar(query) or 0)


async def forget_call_objects(session: AsyncSession, account_id: str, tool_call_id: str, key: str) -> None:
    """Drop a call's rows for ``key`` (retention released the call's reference to it)."""
    await session.execute(delete(StoredObject).where(
        StoredObject.account_id == account_id, StoredObject.tool_call_id == tool_call_id, StoredObject.key == key))


__all__ = ["claim_objects", "forget_call_objects", "object_lock", "record_object", "rows_naming"]
