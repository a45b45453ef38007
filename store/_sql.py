"""Helpers shared by the query modules: error translation, ids, ``seq`` allocation, ``COPY``.

:func:`translate_errors` is the one place where SQLAlchemy/asyncpg exceptions
become :mod:`store.errors` types (:func:`copy_rows`, the one statement that
goes to the driver directly, maps its errors the same way).
"""

from __future__ import annotations

import functools
import re
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, ParamSpec, TypeVar

import asyncpg
from sqlalchemy import Table, select, update
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from store.errors import (
    AccountDeletedError,
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
ACCOUNT_DELETED_SQLSTATE = "DSR02"
"""Raised by the ``refuse_deleted_account`` triggers: a row inserted for an account being deleted (migration 0011)."""

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
    mapped = _translate_postgres(
        pg,
        sqlstate,
        message,
        lost=error.connection_invalidated,
        integrity=isinstance(error, sa_exc.IntegrityError),
    )
    if mapped is None and isinstance(error, (sa_exc.OperationalError, sa_exc.InterfaceError)):
        return TransientStoreError(f"database unavailable: {message}")
    return mapped


def translate_driver_error(error: BaseException) -> StoreError | None:
    """The store error for an exception the asyncpg connection raised itself.

    For the few statements that bypass SQLAlchemy (``COPY`` in
    :func:`copy_rows`); the mapping is :func:`translate`'s.

    Args:
        error: the exception raised by the driver.

    Returns:
        A :class:`StoreError` to raise in its place, or ``None`` to re-raise it as is.
    """
    sqlstate = getattr(error, "sqlstate", None)
    if sqlstate is None:
        return None
    message = getattr(error, "message", None) or str(error)
    return _translate_postgres(error, sqlstate, message, lost=False, integrity=sqlstate.startswith("23"))


def _translate_postgres(
    pg: BaseException | None, sqlstate: str | None, message: str, *, lost: bool, integrity: bool
) -> StoreError | None:
    if sqlstate == ACCOUNT_DELETED_SQLSTATE:
        return AccountDeletedError(message)
    if sqlstate == BRANCH_CYCLE_SQLSTATE:
        branch_ids = (getattr(pg, "detail", None) or "").split(",")
        return BranchCycleError([b for b in branch_ids if b], message)
    if lost or sqlstate in _TRANSIENT_SQLSTATES or (sqlstate or "").startswith("08"):
        return TransientStoreError(f"database unavailable: {message}")
    if integrity:
        detail = getattr(pg, "detail", None) or ""
        match = _FK_DETAIL.search(detail)
        if sqlstate == "23503" and match is not None:
            kind = TABLE_KINDS.get(match["table"], match["table"])
            return NotFoundError(kind, match["vals"].split(", ")[-1])
        constraint = getattr(pg, "constraint_name", None)
        return IntegrityViolation(f"{message} [{constraint}] {detail}".strip())
    return None


def translate_errors(fn: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
    """Decorate a store coroutine so it raises only :mod:`store.errors` types.

    Args:
        fn: an ``async`` store function.
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

    Returns:
        The allocated ``seq``.

    Raises:
        NotFoundError: the conversation does not exist in the account.
    """
    return await allocate_seqs(session, account_id, conversation_id, 1)


async def allocate_seqs(session: AsyncSession, account_id: str, conversation_id: str, count: int) -> int:
    """Take ``count`` consecutive ``seq`` values of a conversation in one statement.

    The statement behind :func:`allocate_seq`, for bulk writes: the same
    row lock, so the block is as much in commit order as a single ``seq``.

    Args:
        session: the caller's session (inside its transaction).
        count: how many (0 takes none, but still checks and locks the conversation).

    Returns:
        The first ``seq`` of the block; the block is ``range(first, first + count)``.

    Raises:
        NotFoundError: the conversation does not exist in the account.
        ValueError: a negative ``count``.
    """
    if count < 0:
        raise ValueError(f"cannot allocate {count} seq values")
    first = await session.scalar(
        update(Conversation)
        .where(Conversation.account_id == account_id, Conversation.id == conversation_id)
        .values(next_seq=Conversation.next_seq + count)
        .returning(Conversation.next_seq - count)
        .execution_options(synchronize_session=False)
    )
    if first is None:
        raise NotFoundError("conversation", conversation_id)
    return int(first)


async def allocate_user_seq(session: AsyncSession, account_id: str) -> int:
    """Take the next ``seq`` of the account's user-memory counter.

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
        account_id: the owning account; rows of other accounts are not found.
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
        values: column values, including ``id`` and ``account_id``.

    Returns:
        Whether a row was inserted (``False``: a row with the same unique key
        already existed and was left unchanged).
    """
    result = await session.execute(
        pg_insert(model).values(**values).on_conflict_do_nothing().returning(model.id)  # type: ignore[attr-defined]
    )
    return result.first() is not None


async def copy_rows(session: AsyncSession, table: Table, rows: Sequence[Mapping[str, Any]]) -> int:
    """Write rows into ``table`` with ``COPY``, inside the session's transaction.

    The columns are the table's own, in table order, restricted to the keys of
    the first row (every row must have the same keys; the others get their
    server defaults). Values go through each column type's bind processor,
    so they arrive as a SQLAlchemy ``INSERT`` would send them.

    Args:
        session: the caller's session (inside its transaction).
        table: the table, from a model (``Model.__table__``).
        rows: column values by column key.

    Raises:
        NotFoundError: a row references a row that does not exist (foreign key).
        IntegrityViolation: a row breaks another constraint (duplicate id ...).
    """
    if not rows:
        return 0
    connection = await session.connection()
    # The asyncpg adapter opens its transaction lazily, on the first statement
    # it runs itself: without one, COPY on the raw connection would autocommit.
    await connection.exec_driver_sql("SELECT 1")
    dialect = connection.dialect
    columns = [column for column in table.columns if column.key in rows[0]]
    process = [(column.key, column.type.bind_processor(dialect)) for column in columns]
    records = [tuple(fn(row[key]) if fn else row[key] for key, fn in process) for row in rows]
    driver = (await connection.get_raw_connection()).driver_connection
    assert driver is not None  # a checked-out connection always has one
    try:
        await driver.copy_records_to_table(
            table.name, records=records, columns=[column.name for column in columns], schema_name=table.schema
        )
    except asyncpg.PostgresError as error:
        mapped = translate_driver_error(error)
        if mapped is None:
            raise
        raise mapped from error
    return len(records)
