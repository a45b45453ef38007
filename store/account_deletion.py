"""Deleting an account: every row and every object, in bounded, repeatable steps.

The plan (:func:`deletion_plan`) is derived from the models, so a table added
later is covered without touching this module:

0. ``mark``: the account is marked as being deleted (``accounts.deleting_at``),
   after waiting for every open transaction that wrote a row for it (the mark
   takes the account row ``FOR UPDATE``, which waits for their foreign-key
   locks): from then on the ``refuse_deleted_account`` triggers refuse any row
   inserted for it (:class:`~store.errors.AccountDeletedError`, permanent), and
   a capture checks it before putting an object in S3
   (:func:`store.payloads.capture_artifact`);
   ``stop``: the account's running workflows are terminated (the activity
   finds them by their conversation search attribute; this module lists the
   conversations);
1. ``unlink:<table>.<column>``: the references that close a cycle between
   tables (``use_alter`` foreign keys: a conversation's root branch, a branch's
   fork message, a run's message and assembly) are set to NULL;
2. ``rows:<table>``: every table with ``account_id``, children before parents
   (the reverse of ``metadata.sorted_tables``); a table that refers to itself
   (branches, participants, model runs) loses its leaves first;
3. ``account``: the account row;
4. ``objects``: every object under ``accounts/<account>/`` (live and archived);
5. the tombstone (:class:`store.models.AccountDeletion`): the sha256 of the id
   and the counts, nothing else.

Each call of :func:`run_step` changes at most ``limit`` rows or objects in one
transaction and returns how many; a step is finished when it returns fewer
than ``limit``. Every step is a no-op once done, so a step repeated after a
crash (a killed worker's activity, retried) is safe. Rows go before objects:
once the account row is gone no new row can be written for it (every table's
``account_id`` references it), and the object sweep after that finds every
object a row ever named.
"""

from __future__ import annotations

import hashlib
from sqlalchemy import Table, and_, exists, func, literal_column, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from store._sql import translate_errors
from store.artifacts import ArtifactStore
from store.models import Account, AccountDeletion, Conversation, metadata

TOMBSTONE_STEP = "tombstone"
ACCOUNT_STEP = "account"
OBJECTS_STEP = "objects"
MARK_STEP = "mark"
STOP_STEP = "stop"


def account_sha256(account_id: str) -> str:
    """What the tombstone keeps of an account id."""
    return hashlib.sha256(account_id.encode()).hexdigest()


def account_tables() -> list[Table]:
    """Every table holding account rows (``account_id``), children first."""
    return [table for table in reversed(metadata.sorted_tables) if "account_id" in table.c]


def _cycle_columns() -> list[tuple[Table, str]]:
    """The nullable columns of ``use_alter`` foreign keys: what closes a cycle between tables."""
    found = []
    for table in metadata.sorted_tables:
        for fk in sorted(table.foreign_key_constraints, key=lambda c: str(c.name)):
            if fk.use_alter:
                column = list(fk.columns)[-1]
                if column.nullable:
                    found.append((table, column.name))
    return found


def deletion_plan() -> list[str]:
    """The steps of an account deletion, in order (see the module docstring)."""
    unlink = [f"unlink:{table.name}.{column}" for table, column in _cycle_columns()]
    rows = [f"rows:{table.name}" for table in account_tables()]
    return [MARK_STEP, STOP_STEP, *unlink, *rows, ACCOUNT_STEP, OBJECTS_STEP, TOMBSTONE_STEP]


def _self_references(table: Table) -> list[str]:
    """Columns of ``table`` referring to a row of the same table."""
    return [list(fk.columns)[-1].name for fk in table.foreign_key_constraints
            if fk.referred_table is table and not fk.use_alter]


@translate_errors
async def mark_deleting(session: AsyncSession, account_id: str) -> None:
    """Mark the account as being deleted (idempotent; a deleted account's row is gone and nothing happens).

    ``FOR UPDATE`` on the account row first: it waits for every open transaction holding a foreign-key lock
    on it (any that inserted a row for the account), so each such row is committed, or rolled back, before
    the mark; every insert after the mark is refused by the ``refuse_deleted_account`` triggers.
    """
    await session.execute(select(Account.id).where(Account.id == account_id).with_for_update())
    await session.execute(Account.__table__.update().where(
        Account.id == account_id, Account.deleting_at.is_(None)).values(deleting_at=func.now()))


@translate_errors
async def account_conversations(session: AsyncSession, account_id: str) -> list[str]:
    """The ids of the account's conversations (what its workflows' search attributes name)."""
    return list((await session.scalars(select(Conversation.id).where(
        Conversation.account_id == account_id).order_by(Conversation.id))).all())


@translate_errors
async def delete_rows(session: AsyncSession, account_id: str, step: str, limit: int) -> int:
    """Run one ``unlink:`` or ``rows:`` step (or the ``account`` step) on at most ``limit`` rows.

    Args:
        account_id: the account being deleted.
        step: a step of :func:`deletion_plan`.
        limit: the most rows changed.

    Returns:
        Rows changed (fewer than ``limit``: the step is finished).
    """
    if step == ACCOUNT_STEP:
        result = await session.execute(Account.__table__.delete().where(Account.id == account_id))
        return result.rowcount or 0
    kind, _, name = step.partition(":")
    if kind == "unlink":
        table_name, column_name = name.split(".")
        table = metadata.tables[table_name]
        column = table.c[column_name]
        pick = select(table.c.id).where(table.c.account_id == account_id, column.is_not(None)).limit(limit)
        result = await session.execute(table.update().where(
            table.c.account_id == account_id, table.c.id.in_(pick.scalar_subquery())).values({column_name: None}))
        return result.rowcount or 0
    if kind != "rows":
        raise ValueError(f"not a row step: {step!r}")
    table = metadata.tables[name]
    # ctid, not id: some tables have composite keys (policy_decisions). Aliased, so the subquery is not
    # correlated with the DELETE's own table.
    doomed = table.alias("doomed")
    pick = select(literal_column("doomed.ctid")).select_from(doomed).where(doomed.c.account_id == account_id)
    for column_name in _self_references(table):  # leaves first: no other row of the table refers to it
        child = table.alias("child")
        pick = pick.where(~exists().where(and_(child.c.account_id == doomed.c.account_id,
                                               child.c[column_name] == doomed.c.id)))
    result = await session.execute(table.delete().where(
        literal_column(f"{table.name}.ctid").in_(pick.limit(limit).scalar_subquery())))
    return result.rowcount or 0


async def delete_objects(artifacts: ArtifactStore, account_id: str, limit: int) -> int:
    """Remove at most ``limit`` objects under the account's prefix.

    Returns:
        Objects removed (fewer than ``limit``: none left).
    """
    keys = await artifacts.list_keys(account_id, limit=limit)
    for key in keys:
        await artifacts.delete(account_id, key)
    return len(keys)


@translate_errors
async def write_tombstone(session: AsyncSession, account_id: str, rows_deleted: int, objects_deleted: int) -> None:
    """Record the deletion (idempotent: the first record stays)."""
    await session.execute(insert(AccountDeletion).values(
        account_sha256=account_sha256(account_id), rows_deleted=rows_deleted, objects_deleted=objects_deleted,
    ).on_conflict_do_nothing(index_elements=["account_sha256"]))


__all__ = [
    "ACCOUNT_STEP",
    "MARK_STEP",
    "OBJECTS_STEP",
    "STOP_STEP",
    "TOMBSTONE_STEP",
    "account_conversations",
    "account_sha256",
    "account_tables",
    "delete_objects",
    "delete_rows",
    "deletion_plan",
    "mark_deleting",
    "write_tombstone",
]
