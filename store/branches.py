"""Branches: forking, re-parenting and the lineage walk.

The lineage of a branch is its chain of ancestors, root first. Each ancestor
contributes its nodes up to ``until_seq``: the fork point of the branch below
it, or an earlier fork point further down the chain (a branch forked from an
inherited message sees the grandparent only up to that message). One
recursive CTE walks the chain; it carries the path walked and stops on a
revisit, so a corrupt parent chain raises :class:`BranchCycleError` instead of
looping. The ``branches_no_cycle`` trigger (migration 0001) refuses such an
update in the first place.
"""

from __future__ import annotations

from sqlalchemy import bindparam, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from policy.records import Lineage, LineageStep, MessageRecord
from store._sql import get_row, insert_once, new_id, translate_errors
from store.convert import to_branch, to_message
from store.errors import BranchCycleError, IntegrityViolation, InvalidForkPointError, NotFoundError
from store.models import Branch, Message
from store.models.base import ID_LENGTH
from store.models.types import StoredId
from store.records import BranchRecord

_LINEAGE_CTE = """
WITH RECURSIVE lineage(id, conversation_id, parent_branch_id, fork_seq, until_seq, path, is_cycle, depth) AS (
    SELECT b.id, b.conversation_id, b.parent_branch_id, b.fork_seq,
           NULL::bigint, ARRAY[b.id]::varchar[], false, 0
      FROM branches b
     WHERE b.account_id = :account_id AND b.id = :branch_id
  UNION ALL
    SELECT p.id, p.conversation_id, p.parent_branch_id, p.fork_seq,
           LEAST(l.until_seq, l.fork_seq), l.path || p.id, p.id = ANY(l.path), l.depth + 1
      FROM lineage l
      JOIN branches p
        ON p.account_id = :account_id AND p.conversation_id = l.conversation_id AND p.id = l.parent_branch_id
     WHERE NOT l.is_cycle
)
"""
"""The walk up the parent chain, as a CTE named ``lineage`` for the statements below."""

_IDS = (bindparam("account_id", type_=StoredId(ID_LENGTH)), bindparam("branch_id", type_=StoredId(ID_LENGTH)))
"""Typed like the id columns, so an id holding U+0000 is looked up as the columns store it (and not found)."""

_LINEAGE_SQL = text(
    _LINEAGE_CTE + "SELECT id, conversation_id, until_seq, path, is_cycle FROM lineage ORDER BY depth DESC"
).bindparams(*_IDS)

_FIRST_USER_MESSAGE_SQL = text(_LINEAGE_CTE + """
SELECT (SELECT conversation_id FROM lineage WHERE depth = 0) AS conversation_id,
       (SELECT path FROM lineage WHERE is_cycle LIMIT 1) AS cycle,
       (SELECT m.id FROM messages m JOIN lineage l
            ON m.account_id = :account_id AND m.conversation_id = l.conversation_id AND m.branch_id = l.id
         WHERE m.role = 'user' AND NOT l.is_cycle AND (l.until_seq IS NULL OR m.seq <= l.until_seq)
         ORDER BY m.seq, m.id LIMIT 1) AS message_id
""").bindparams(*_IDS)

_LINEAGE_MESSAGES_SQL = text(_LINEAGE_CTE + """
SELECT m.* FROM messages m JOIN lineage l
    ON m.account_id = :account_id AND m.conversation_id = l.conversation_id AND m.branch_id = l.id
 WHERE NOT l.is_cycle AND (l.until_seq IS NULL OR m.seq <= l.until_seq)
 ORDER BY m.seq, m.id
""").bindparams(*_IDS)


async def _lineage_rows(session: AsyncSession, account_id: str, branch_id: str) -> tuple[str, Lineage]:
    rows = (await session.execute(_LINEAGE_SQL, {"account_id": account_id, "branch_id": branch_id})).all()
    if not rows:
        raise NotFoundError("branch", branch_id)
    for row in rows:
        if row.is_cycle:
            raise BranchCycleError(list(row.path))
    steps = tuple(LineageStep(branch_id=row.id, until_seq=row.until_seq) for row in rows)
    return rows[-1].conversation_id, Lineage(steps=steps)


@translate_errors
async def first_user_message_id(session: AsyncSession, account_id: str, conversation_id: str,
                                branch_id: str) -> str | None:
    """The oldest user message on the branch's lineage (its own and its ancestors' up to each fork), in one query.

    Raises:
        NotFoundError: no such branch in the account's conversation.
        BranchCycleError: the parent chain loops (corrupt data).
    """
    row = (await session.execute(_FIRST_USER_MESSAGE_SQL, {"account_id": account_id, "branch_id": branch_id})).one()
    if row.conversation_id is None or row.conversation_id != conversation_id:
        raise NotFoundError("branch", branch_id)
    if row.cycle is not None:
        raise BranchCycleError(list(row.cycle))
    return row.message_id


@translate_errors
async def lineage_messages(session: AsyncSession, account_id: str, conversation_id: str,
                           branch_id: str) -> list[MessageRecord]:
    """Every message on the branch's lineage, oldest first: the whole transcript, however long.

    Raises:
        NotFoundError: no such branch in the account's conversation.
        BranchCycleError: the parent chain loops (corrupt data).
    """
    found, _ = await _lineage_rows(session, account_id, branch_id)
    if found != conversation_id:
        raise NotFoundError("branch", branch_id)
    rows = await session.scalars(select(Message).from_statement(_LINEAGE_MESSAGES_SQL),
                                 {"account_id": account_id, "branch_id": branch_id})
    return [to_message(row) for row in rows]


@translate_errors
async def load_lineage(session: AsyncSession, account_id: str, branch_id: str) -> Lineage:
    """The branch and its ancestors, root first, each with its ``until_seq``.

    Returns:
        The lineage; the active branch is last, with ``until_seq=None``.

    Raises:
        NotFoundError: no such branch in the account.
        BranchCycleError: the parent chain loops (corrupt data).
    """
    _, lineage = await _lineage_rows(session, account_id, branch_id)
    return lineage


async def _fork_point(
    session: AsyncSession, account_id: str, conversation_id: str, parent: Lineage, message_id: str
) -> int:
    message = await session.scalar(
        select(Message).where(
            Message.account_id == account_id,
            Message.conversation_id == conversation_id,
            Message.id == message_id,
        )
    )
    if message is None:
        raise NotFoundError("message", message_id)
    if not parent.contains(message.branch_id, message.seq):
        raise InvalidForkPointError(
            f"message {message_id!r} (branch {message.branch_id}, seq {message.seq}) "
            f"is not in the lineage of branch {parent.active_branch_id!r}"
        )
    return message.seq


@translate_errors
async def fork_branch(
    session: AsyncSession,
    account_id: str,
    conversation_id: str,
    parent_branch_id: str,
    at_message_id: str,
    *,
    name: str = "",
    branch_id: str | None = None,
) -> BranchRecord:
    """Fork a new branch from ``parent_branch_id`` at a message.

    The new branch sees the parent's lineage up to and including the fork
    message. Safe to retry with the same ``branch_id``.

    Args:
        conversation_id: the conversation of the parent branch.
        parent_branch_id: the branch to fork from.
        at_message_id: the fork message; it must be in the parent's lineage
            (on the parent itself or inherited from an ancestor).
        name: the new branch's name.
        branch_id: the id to use; a fresh one when ``None``.

    Returns:
        The new branch (or the existing one on a retry).

    Raises:
        NotFoundError: unknown parent branch or message.
        InvalidForkPointError: the message is not in the parent's lineage.
    """
    if branch_id is not None:
        existing = await session.scalar(
            select(Branch).where(Branch.account_id == account_id, Branch.id == branch_id)
        )
        if existing is not None:
            return to_branch(existing)
    parent_conversation, parent = await _lineage_rows(session, account_id, parent_branch_id)
    if parent_conversation != conversation_id:
        raise NotFoundError("branch", parent_branch_id)
    fork_seq = await _fork_point(session, account_id, conversation_id, parent, at_message_id)
    branch_id = branch_id or new_id()
    await insert_once(
        session,
        Branch,
        {
            "id": branch_id,
            "account_id": account_id,
            "conversation_id": conversation_id,
            "parent_branch_id": parent_branch_id,
            "fork_message_id": at_message_id,
            "fork_seq": fork_seq,
            "name": name,
        },
    )
    try:
        return await get_branch(session, account_id, branch_id)
    except NotFoundError:
        raise IntegrityViolation(f"branch id {branch_id!r} is taken") from None


@translate_errors
async def reparent_branch(
    session: AsyncSession,
    account_id: str,
    branch_id: str,
    new_parent_branch_id: str,
    at_message_id: str,
) -> BranchRecord:
    """Move a branch under another parent, forking at ``at_message_id``.

    Args:
        branch_id: the branch to move.
        new_parent_branch_id: its new parent, in the same conversation.
        at_message_id: the new fork message, in the new parent's lineage.

    Raises:
        NotFoundError: unknown branch, parent or message.
        BranchCycleError: the new parent descends from ``branch_id``.
        InvalidForkPointError: the message is not in the new parent's lineage.
    """
    branch = await get_row(session, Branch, account_id, branch_id, for_update=True)
    parent_conversation, parent = await _lineage_rows(session, account_id, new_parent_branch_id)
    if parent_conversation != branch.conversation_id:
        raise NotFoundError("branch", new_parent_branch_id)
    chain = [step.branch_id for step in parent.steps]
    if branch_id in chain:
        # Path from the branch down to the new parent, then back to the branch.
        raise BranchCycleError([*chain[chain.index(branch_id) :], branch_id])
    fork_seq = await _fork_point(session, account_id, branch.conversation_id, parent, at_message_id)
    await session.execute(
        update(Branch)
        .where(Branch.account_id == account_id, Branch.id == branch_id)
        .values(parent_branch_id=new_parent_branch_id, fork_message_id=at_message_id, fork_seq=fork_seq)
        .execution_options(synchronize_session=False)
    )
    return await get_branch(session, account_id, branch_id)


@translate_errors
async def get_branch(session: AsyncSession, account_id: str, branch_id: str) -> BranchRecord:
    """A branch by id.

    Raises:
        NotFoundError: no such branch in the account.
    """
    return to_branch(await get_row(session, Branch, account_id, branch_id))


@translate_errors
async def list_branches(session: AsyncSession, account_id: str, conversation_id: str) -> list[BranchRecord]:
    """Every branch of a conversation, by creation time (then id).

    Returns:
        The branches (empty for an unknown conversation).
    """
    rows = await session.scalars(
        select(Branch)
        .where(Branch.account_id == account_id, Branch.conversation_id == conversation_id)
        .order_by(Branch.created_at, Branch.id)
    )
    return [to_branch(row) for row in rows]
