"""Tool memories: the compact, derived results a model reads, and their links.

Supersession and contradiction are stored on both sides of each link
(``supersedes`` / ``superseded_by``, ``conflicts_with``), so a reader never
has to walk the graph to know whether a memory is current.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import func, not_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from policy.derive import MemoryDraft
from policy.enums import PrivacyClass, PromotionPolicy, ResolutionStatus, RuntimeKind, VisibilityScope
from policy.records import ToolMemoryRecord
from store._sql import allocate_seq, get_row, insert_once, new_id, translate_errors
from store.convert import to_tool_memory
from store.errors import IntegrityViolation, NotFoundError
from store.models import ToolArtifact, ToolMemory


@translate_errors
async def insert_tool_memory(
    session: AsyncSession,
    account_id: str,
    conversation_id: str,
    memory: ToolMemoryRecord,
) -> ToolMemoryRecord:
    """Store a derived tool memory; idempotent on ``memory.id``.

    The store assigns ``seq`` (``memory.seq`` is ignored). Links in the
    record are applied through :func:`set_superseded` and
    :func:`add_conflict`, so both sides of each link agree;
    ``memory.superseded_by`` is ignored (a new memory is live).

    Args:
        session: the caller's session.
        account_id: the owning account.
        conversation_id: the conversation.
        memory: the memory, as derived by the policy core.

    Returns:
        The stored memory, with its ``seq`` and links.

    Raises:
        NotFoundError: unknown conversation, branch, owner, run or linked memory.
    """
    existing = await session.scalar(
        select(ToolMemory).where(ToolMemory.account_id == account_id, ToolMemory.id == memory.id)
    )
    if existing is not None:
        return to_tool_memory(existing)
    seq = await allocate_seq(session, account_id, conversation_id)
    values = memory.model_dump(
        mode="json", exclude={"seq", "superseded_by", "supersedes", "conflicts_with", "observed_at", "stale_after"}
    )
    values.update(
        account_id=account_id,
        conversation_id=conversation_id,
        seq=seq,
        observed_at=memory.observed_at,
        stale_after=memory.stale_after,
    )
    if not await insert_once(session, ToolMemory, values):
        raise IntegrityViolation(f"tool memory id {memory.id!r} is taken")
    for old_id in memory.supersedes:
        await _supersede(session, account_id, old_id, memory.id)
    for other_id in memory.conflicts_with:
        await _conflict(session, account_id, memory.id, other_id)
    return await get_tool_memory(session, account_id, memory.id)


@translate_errors
async def insert_derived_memory(
    session: AsyncSession,
    account_id: str,
    artifact_id: str,
    draft: MemoryDraft,
    *,
    memory_id: str | None = None,
    observed_at: datetime | None = None,
    supersedes: Sequence[str] = (),
    conflicts_with: Sequence[str] = (),
) -> ToolMemoryRecord:
    """Store the memory :func:`policy.derive.derive_memory` drafted from an artifact.

    Branch, owner, run, runtime kind, visibility, sharing, privacy and
    promotion are the artifact's; the memory cites the artifact.

    Args:
        session: the caller's session.
        account_id: the owning account.
        artifact_id: the artifact the draft was derived from.
        draft: the derived draft.
        memory_id: the id to use (idempotency key); a fresh one when ``None``.
        observed_at: when the result was observed; the capture time when ``None``.
        supersedes: older memories this one replaces.
        conflicts_with: memories this one contradicts.

    Returns:
        The stored memory.

    Raises:
        NotFoundError: unknown artifact or linked memory.
    """
    artifact = await get_row(session, ToolArtifact, account_id, artifact_id)
    memory = ToolMemoryRecord(
        id=memory_id or new_id(),
        branch_id=artifact.branch_id,
        seq=0,
        owner_participant_id=artifact.owner_participant_id,
        model_run_id=artifact.model_run_id,
        runtime_kind=RuntimeKind(artifact.runtime_kind),
        source_artifact_ids=(artifact.id,),
        source_tool=artifact.tool_name,
        visibility=VisibilityScope(artifact.visibility),
        shared_with=tuple(artifact.shared_with),
        privacy=PrivacyClass(artifact.privacy),
        observed_at=observed_at or artifact.captured_at,
        promotion=PromotionPolicy(artifact.promotion),
        supersedes=tuple(supersedes),
        conflicts_with=tuple(conflicts_with),
        **draft.model_dump(),
    )
    return await insert_tool_memory(session, account_id, artifact.conversation_id, memory)


@translate_errors
async def find_memories_by_subject(
    session: AsyncSession,
    account_id: str,
    conversation_id: str,
    subject_key: str,
    *,
    live_only: bool = True,
) -> list[ToolMemoryRecord]:
    """Memories of a conversation about one subject, in ``seq`` order.

    What a caller needs to decide supersession (it must still check that the
    older memory is on the new one's lineage).

    Args:
        session: the caller's session.
        account_id: the owning account.
        conversation_id: the conversation.
        subject_key: the canonical subject.
        live_only: skip memories already superseded.

    Returns:
        The memories.
    """
    stmt = select(ToolMemory).where(
        ToolMemory.account_id == account_id,
        ToolMemory.conversation_id == conversation_id,
        ToolMemory.subject_key == subject_key,
    )
    if live_only:
        stmt = stmt.where(ToolMemory.superseded_by.is_(None))
    return [to_tool_memory(row) for row in await session.scalars(stmt.order_by(ToolMemory.seq))]


@translate_errors
async def get_tool_memory(session: AsyncSession, account_id: str, memory_id: str) -> ToolMemoryRecord:
    """A tool memory by id.

    Raises:
        NotFoundError: no such memory in the account.
    """
    return to_tool_memory(await get_row(session, ToolMemory, account_id, memory_id))


async def _supersede(session: AsyncSession, account_id: str, old_id: str, new_id_: str) -> None:
    if old_id == new_id_:
        raise IntegrityViolation(f"memory {old_id!r} cannot supersede itself")
    old = await get_row(session, ToolMemory, account_id, old_id, for_update=True)
    new = await get_row(session, ToolMemory, account_id, new_id_, for_update=True)
    if old.conversation_id != new.conversation_id:
        raise NotFoundError("tool_memory", new_id_)
    if new.seq <= old.seq:
        # Only a newer memory supersedes an older one; this also rules out loops.
        raise IntegrityViolation(f"memory {new_id_!r} (seq {new.seq}) is not newer than {old_id!r} (seq {old.seq})")
    if old.superseded_seq is None or old.superseded_seq <= new.seq:
        old.superseded_by = new.id
        old.superseded_seq = new.seq
    if old.id not in new.supersedes:
        new.supersedes = [*new.supersedes, old.id]
    await session.flush()


@translate_errors
async def set_superseded(session: AsyncSession, account_id: str, old_id: str, new_id: str) -> None:  # noqa: A002
    """Record that memory ``new_id`` supersedes memory ``old_id``.

    Sets ``old.superseded_by`` and appends to ``new.supersedes``; repeating
    the call changes nothing. When several memories supersede one, the newest
    wins ``superseded_by``.

    Args:
        session: the caller's session.
        account_id: the owning account.
        old_id: the superseded memory.
        new_id: the superseding memory; it must be newer (higher ``seq``).

    Raises:
        NotFoundError: either memory is unknown, or they are in different conversations.
        IntegrityViolation: the same memory, or ``new_id`` is not newer.
    """
    await _supersede(session, account_id, old_id, new_id)


async def _conflict(session: AsyncSession, account_id: str, a_id: str, b_id: str) -> None:
    if a_id == b_id:
        raise IntegrityViolation(f"memory {a_id!r} cannot conflict with itself")
    a = await get_row(session, ToolMemory, account_id, a_id)
    b = await get_row(session, ToolMemory, account_id, b_id)
    if a.conversation_id != b.conversation_id:
        raise NotFoundError("tool_memory", b_id)
    for this, other in ((a_id, b_id), (b_id, a_id)):
        await session.execute(
            update(ToolMemory)
            .where(
                ToolMemory.account_id == account_id,
                ToolMemory.id == this,
                not_(ToolMemory.conflicts_with.any_() == other),
            )
            .values(conflicts_with=func.array_append(ToolMemory.conflicts_with, other))
            .execution_options(synchronize_session=False)
        )


@translate_errors
async def add_conflict(session: AsyncSession, account_id: str, a_id: str, b_id: str) -> None:
    """Record that two memories contradict each other (symmetric, idempotent).

    Args:
        session: the caller's session.
        account_id: the owning account.
        a_id: one memory.
        b_id: the other memory, in the same conversation.

    Raises:
        NotFoundError: either memory is unknown.
        IntegrityViolation: ``a_id == b_id``.
    """
    await _conflict(session, account_id, a_id, b_id)


@translate_errors
async def mark_memory_resolution(
    session: AsyncSession,
    account_id: str,
    memory_id: str,
    status: ResolutionStatus,
    repair_attempts: int | None = None,
) -> ToolMemoryRecord:
    """Record whether a memory's provenance still resolves to its artifacts.

    Args:
        session: the caller's session.
        account_id: the owning account.
        memory_id: the memory.
        status: the resolution status found.
        repair_attempts: the number of repair attempts so far; unchanged when ``None``.

    Returns:
        The updated memory.

    Raises:
        NotFoundError: no such memory in the account.
    """
    row = await get_row(session, ToolMemory, account_id, memory_id, for_update=True)
    row.resolution = ResolutionStatus(status).value
    if repair_attempts is not None:
        row.repair_attempts = repair_attempts
    await session.flush()
    return to_tool_memory(row)
