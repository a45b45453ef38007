"""Helpers shared by the query modules: error translation, ids, ``seq`` allocation.

:func:`translate_errors` is the one place where SQLAlchemy/asyncpg exceptions
become :mod:`store.errors` types.
"""

from __future__ import annotations

import functools
import re
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, ParamSpec, TypeVar

from sqlalchemy import exc as sa_exc
from sqlalchemy import select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from store.errors import (
    BranchCycleError,
    IntegrityViolation,
    NotFoundError,
    StoreError,
    TransientStoreError,
)
from store.models import Account, Base, Conversation

P = ParamSpec("P")
T = TypeVar("T")
M = TypeVar("M", bound=Base)

BRANCH_CYCLE_SQLSTATE = "DSR01"
"""Raised by the ``branches_no_cycle`` trigger (see migration 0001)."""

_TRANSIENT_SQLSTATES = {"40001", "40P01", "55P03", "57P01", "57P02", "57P03", "53300"}
"""Serialisation failure, deadlock, lock timeout, admin shutdown, crash, cannot connect now, too many connections."""

TABLE_KINDS = {
    "accounts": "account",
    "conversations": "conversation",
    "branches": "branch",
    "participants": "participant",
    "messages": "message",
    "model_runs": "model_run",
    "tool_calls": "tool_call",
    "tool_artifacts": "artifact",
    "tool_memories": "tool_memory",
    "user_memories": "user_memory",
    "skill_states": "skill_state",
    "continuation_checkpoints": "checkpoint",
    "context_assemblies": "context_assembly",
}
"""The name a :class:`NotFoundError` gives the rows of each table."""

_FK_DETAIL = re.compile(r'Key \((?P<cols>[^)]*)\)=\((?P<vals>.*)\) is not present in table "(?P<table>\w+)"')


def new_id() -> str:
    """A fresh random id (a UUID4 string)."""
    return str(uuid.uuid4())


def utcnow() -> datetime:
    """The current UTC time (the store runs in activities, never in workflows)."""
    return datetime.now(UTC)


def _pg_error(error: sa_exc.DBAPIError) -> BaseException | None:
    # SQLAlchemy's asyncpg adapter keeps the asyncpg exception as the cause.
    orig = error.orig
    return getattr(orig, "__cause__", None) or orig


def translate(error: sa_exc.SQLAlchemyError) -> StoreError | None:
    """The store error for a SQLAlchemy exception, or ``None`` to re-raise it as is.

    Args:
        error: the exception raised by SQLAlchemy.

    Returns:
        A :class:`StoreError` to raise in its place, or ``None`` for
        programming errors (bad SQL) that should surface unchanged.
    """
    if not isinstance(error, sa_exc.DBAPIError):
        return None
    pg = _pg_error(error)
    sqlstate = getattr(pg, "sqlstate", None) or getattr(error.orig, "sqlstate", None)
    message = getattr(pg, "message", None) or str(error.orig)
    if sqlstate == BRANCH_CYCLE_SQLSTATE:
        branch_ids = (getattr(pg, "detail", None) or "").split(",")
        return BranchCycleError([b for b in branch_ids if b], message)
    if error.connection_invalidated or sqlstate in _TRANSIENT_SQLSTATES or (sqlstate or "").startswith("08"):
        return TransientStoreError(f"database unavailable: {message}")
    if isinstance(error, sa_exc.IntegrityError):
        detail = getattr(pg, "detail", None) or ""
        match = _FK_DETAIL.search(detail)
        if sqlstate == "23503" and match is not None:
            kind = TABLE_KINDS.get(match["table"], match["table"])
            return NotFoundError(kind, match["vals"].split(", ")[-1])
        constraint = getattr(pg, "constraint_name", None)
        return IntegrityViolation(f"{message} [{constraint}] {detail}".strip())
    if isinstance(error, (sa_exc.OperationalError, sa_exc.InterfaceError)):
        return TransientStoreError(f"database unavailable: {message}")
    return None


def translate_errors(fn: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
    """Decorate a store coroutine so it raises only :mod:`store.errors` types.

    Args:
        fn: an ``async`` store function.

    Returns:
        The wrapped function.
    """

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return await fn(*args, **kwargs)
        except StoreError:
            raise
        except sa_exc.SQLAlchemyError as error:
            mapped = translate(error)
            if mapped is None:
                raise
            raise mapped from error
        except (OSError, TimeoutError) as error:
            # asyncpg raises plain socket errors while connecting.
            raise TransientStoreError(f"database unavailable: {error}") from error

    return wrapper


async def allocate_seq(session: AsyncSession, account_id: str, conversation_id: str) -> int:
    """Take the next ``seq`` of a conversation.

    The ``UPDATE`` locks the conversation row until the caller's transaction
    ends, so ``seq`` order is commit order and a reader that sees
    ``next_seq - 1`` sees every node up to it.

    Args:
        session: the caller's session (inside its transaction).
        account_id: the owning account.
        conversation_id: the conversation.

    Returns:
        The allocated ``seq``.

    Raises:
        NotFoundError: the conversation does not exist in the account.
    """
    seq = await session.scalar(
        update(Conversation)
        .where(Conversation.account_id == account_id, Conversation.id == conversation_id)
        .values(next_seq=Conversation.next_seq + 1)
        .returning(Conversation.next_seq - 1)
        .execution_options(synchronize_session=False)
    )
    if seq is None:
        raise NotFoundError("conversation", conversation_id)
    return int(seq)


async def allocate_user_seq(session: AsyncSession, account_id: str) -> int:
    """Take the next ``seq`` of the account's user-memory counter.

    Args:
        session: the caller's session.
        account_id: the account.

    Returns:
        The allocated ``seq``.

    Raises:
        NotFoundError: the account does not exist.
    """
    seq = await session.scalar(
        update(Account)
        .where(Account.id == account_id)
        .values(next_user_seq=Account.next_user_seq + 1)
        .returning(Account.next_user_seq - 1)
        .execution_options(synchronize_session=False)
    )
    if seq is None:
        raise NotFoundError("account", account_id)
    return int(seq)


async def get_row(
    session: AsyncSession,
    model: type[M],
    account_id: str,
    row_id: str,
    *,
    for_update: bool = False,
) -> M:
    """The row of ``model`` with ``row_id`` in ``account_id``.

    Args:
        session: the caller's session.
        model: the mapped class.
        account_id: the owning account; rows of other accounts are not found.
        row_id: the primary key.
        for_update: lock the row until the transaction ends.

    Returns:
        The row, freshly loaded (``populate_existing``).

    Raises:
        NotFoundError: no such row in the account.
    """
    stmt = (
        select(model)
        .where(model.id == row_id, model.account_id == account_id)  # type: ignore[attr-defined]
        .execution_options(populate_existing=True)
    )
    if for_update:
        stmt = stmt.with_for_update()
    row = await session.scalar(stmt)
    if row is None:
        raise NotFoundError(TABLE_KINDS[model.__tablename__], row_id)  # type: ignore[attr-defined]
    return row


async def insert_once(session: AsyncSession, model: type[M], values: dict[str, Any]) -> bool:
    """``INSERT ... ON CONFLICT DO NOTHING``: the write that is safe to retry.

    Args:
        session: the caller's session.
        model: the mapped class.
        values: column values, including ``id`` and ``account_id``.

    Returns:
        Whether a row was inserted (``False``: a row with the same unique key
        already existed and was left unchanged).
    """
    result = await session.execute(
        pg_insert(model).values(**values).on_conflict_do_nothing().returning(model.id)  # type: ignore[attr-defined]
    )
    return result.first() is not None
