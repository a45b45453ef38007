"""User memories: personalisation facts about the account's user (a tool result never becomes one by itself)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from policy.enums import PrivacyClass, at_least
from policy.records import UserMemoryRecord
from store._sql import allocate_user_seq, get_row, insert_once, new_id, translate_errors
from store.convert import to_user_memory
from store.errors import IntegrityViolation
from store.models import UserMemory
from store.taint import records_privacy


@translate_errors
async def put_user_memory(
    session: AsyncSession,
    account_id: str,
    text: str,
    *,
    privacy: PrivacyClass = PrivacyClass.USER,
    derived_from: Sequence[str] = (),
    participant_id: str | None = None,
    user_memory_id: str | None = None,
) -> UserMemoryRecord:
    """Store a user memory; idempotent on ``user_memory_id``.

    Args:
        privacy: its declared class; stored raised to the strictest class of ``derived_from``.
        derived_from: ids of the graph records it was built from (tool memories, artifacts,
            tool calls, model runs ...); an id that names no record fails closed.
        participant_id: restrict it to one participant; ``None`` for all.
        user_memory_id: the id to use; a fresh one when ``None``.

    Returns:
        The memory, with ``seq`` from the account's user-memory counter.

    Raises:
        NotFoundError: no such account.
    """
    if user_memory_id is not None:
        existing = await session.scalar(
            select(UserMemory).where(UserMemory.account_id == account_id, UserMemory.id == user_memory_id)
        )
        if existing is not None:
            return to_user_memory(existing)
    # Taint: state built from graph records is never looser than any of them.
    privacy = at_least(privacy, await records_privacy(session, account_id, derived_from, what="derived_from",
                                                      refuse_unknown=False))
    seq = await allocate_user_seq(session, account_id)
    user_memory_id = user_memory_id or new_id()
    values = {
        "id": user_memory_id,
        "account_id": account_id,
        "seq": seq,
        "text": text,
        "privacy": PrivacyClass(privacy).value,
        "participant_id": participant_id,
    }
    if not await insert_once(session, UserMemory, values):
        existing = await session.scalar(
            select(UserMemory).where(UserMemory.account_id == account_id, UserMemory.id == user_memory_id)
        )
        if existing is None:
            raise IntegrityViolation(f"user memory id {user_memory_id!r} is taken")
        return to_user_memory(existing)
    return to_user_memory(await get_row(session, UserMemory, account_id, user_memory_id))


@translate_errors
async def get_user_memory(session: AsyncSession, account_id: str, user_memory_id: str) -> UserMemoryRecord:
    """A user memory by id.

    Raises:
        NotFoundError: no such user memory in the account.
    """
    return to_user_memory(await get_row(session, UserMemory, account_id, user_memory_id))


@translate_errors
async def list_user_memories(session: AsyncSession, account_id: str, *, limit: int = 100) -> list[UserMemoryRecord]:
    """The account's most recent user memories, oldest first.

    Args:
        limit: at most this many.

    Returns:
        The memories, in ``seq`` order.
    """
    rows = list(
        await session.scalars(
            select(UserMemory)
            .where(UserMemory.account_id == account_id)
            .order_by(UserMemory.seq.desc())
            .limit(limit)
        )
    )
    return [to_user_memory(row) for row in reversed(rows)]


@translate_errors
async def forget_user_memory(session: AsyncSession, account_id: str, user_memory_id: str) -> bool:
    """Delete one of the account's user memories; later contexts no longer carry it.

    An id of another account is treated as unknown: nothing is deleted and the
    answer is the same as for an id that never existed.
    """
    result = await session.execute(
        delete(UserMemory).where(UserMemory.account_id == account_id, UserMemory.id == user_memory_id)
        .returning(UserMemory.id)
    )
    return result.first() is not None
