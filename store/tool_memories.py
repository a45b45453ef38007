"""Tool memories: the compact, derived results a model reads, and their links.

Supersession and contradiction are stored on both sides of each link
(``supersedes`` / ``superseded_by``, ``conflicts_with``), so a reader never
has to walk the graph to know whether a memory is current.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import String, Text, and_, func, not_, or_, select, update
from sqlalchemy.dialects.postgresql import array
from sqlalchemy.ext.asyncio import AsyncSession

from policy.enums import PrivacyClass, ResolutionStatus, ToolCallStatus, strictest_privacy
from policy.records import ToolMemoryRecord
from policy.resources import both_effects
from policy.retention import KEEP, RetentionRule, subject_keys
from store._sql import allocate_seq, get_row, insert_once, translate_errors
from store.convert import to_tool_memory
from store.errors import IntegrityViolation, NotFoundError, TaintError
from store.taint import classes_of
from store.models import ToolArtifact, ToolMemory


@translate_errors
async def insert_tool_memory(
    session: AsyncSession,
    account_id: str,
    conversation_id: str,
    memory: ToolMemoryRecord,
    *,
    retention: RetentionRule = KEEP,
) -> ToolMemoryRecord:
    """Store a derived tool memory; idempotent on ``memory.id``.

    The store assigns ``seq`` (``memory.seq`` is ignored) and the privacy
    class: ``memory.privacy`` raised to the strictest of its sources
    (:func:`memory_privacy`), so a memory is never looser than any artifact
    or memory it was built from. Links in the
    record are applied through :func:`set_superseded` and
    :func:`add_conflict`, so both sides of each link agree;
    ``memory.superseded_by`` is ignored (a new memory is live).

    Args:
        memory: the memory, as derived by the policy core.
        retention: the rule it is kept under (:func:`policy.retention.effective_rule`), written by the insert.

    Returns:
        The stored memory, with its ``seq`` and links.

    Raises:
        NotFoundError: unknown conversation, branch, owner, run or linked memory.
        TaintError: a source artifact or promoted-from memory that is not in the account.
    """
    existing = await session.scalar(
        select(ToolMemory).where(ToolMemory.account_id == account_id, ToolMemory.id == memory.id)
    )
    if existing is not None:
        return to_tool_memory(existing)
    memory = memory.model_copy(update={"privacy": await memory_privacy(session, account_id, memory)})
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
        retention=retention.kind.value,
        retention_days=retention.after_days,
    )
    if not await insert_once(session, ToolMemory, values):
        raise IntegrityViolation(f"tool memory id {memory.id!r} is taken")
    for old_id in memory.supersedes:
        await _supersede(session, account_id, old_id, memory.id)
    for other_id in memory.conflicts_with:
        await _conflict(session, account_id, memory.id, other_id)
    return await get_tool_memory(session, account_id, memory.id)


async def memory_privacy(session: AsyncSession, account_id: str, memory: ToolMemoryRecord) -> PrivacyClass:
    """The class a memory is stored under: its own, raised to the strictest of its sources.

    Sources are the artifacts it cites (``source_artifact_ids``) and the
    memories it was promoted from (``promoted_from``); each one's class is read
    from the graph, not taken from the caller.

    Raises:
        TaintError: a source is not in the account (its class, so the memory's, is unknown).
    """
    sources = {"artifact": set(memory.source_artifact_ids), "memory": set(memory.promoted_from)}
    classes: list[PrivacyClass] = []
    for kind, model in (("artifact", ToolArtifact), ("memory", ToolMemory)):
        found = await classes_of(session, account_id, model, sources[kind])
        missing = sorted(sources[kind] - set(found))
        if missing:
            raise TaintError(f"memory {memory.id!r}: source {kind} {missing[0]!r} is not in the account, "
                             "so its privacy class is unknown")
        classes += found.values()
    return strictest_privacy((memory.privacy, *classes))


RELATED_LIMIT = 500
"""The newest related memories a new one is linked against (older versions of a subject were linked when
they were new)."""


@translate_errors
async def related_memories(
    session: AsyncSession,
    account_id: str,
    conversation_id: str,
    subject_key: str,
    fact_keys: Sequence[str] = (),
    *,
    tool_name: str | None = None,
    resources: Sequence[str] = (),
) -> tuple[list[ToolMemoryRecord], dict[str, ToolCallStatus]]:
    """The memories a new memory may supersede or contradict, found by subject and fact.

    A targeted query (``ix_tool_memories_subject`` and ``ix_tool_memories_facts``), not
    the assembly's bounded candidate pool: the newest :data:`RELATED_LIMIT` same-subject
    memories, superseded or not, and the live memories asserting one of ``fact_keys``,
    however old. The caller decides which of them the new memory's owner can see on its
    lineage, and which are live there (:func:`policy.links.links_for`).

    Args:
        subject_key: the new memory's subject.
        fact_keys: the ``entity.attribute`` keys of the new memory's facts.
        tool_name: the new memory's tool: the same subject after retention redacted it
            (:func:`policy.retention.redacted_subject`) is matched too.
        resources: the new memory's resources (:mod:`policy.resources`): memories naming one of them,
            read or written, are related too (``ix_tool_memories_resources``).

    Returns:
        ``(memories, statuses)``: the memories in ``seq`` order, and the status of
        every artifact they cite (a failure supersedes only memories of failures).
    """
    # Same-subject memories whether or not something superseded them: ``superseded_by`` names one
    # replacement, which may sit on a sibling branch, so only the caller, knowing the lineage, can tell
    # whether a memory is live there. Contradictions look at memories live everywhere.
    related = ToolMemory.subject_key.in_(subject_keys(tool_name, subject_key) if tool_name else (subject_key,))
    if resources:
        related = or_(related, ToolMemory.resources.overlap(array(both_effects(resources), type_=String(64))))
    if fact_keys:
        facts = ToolMemory.payload["facts"]
        related = or_(related, and_(ToolMemory.superseded_by.is_(None),
                                    facts.has_any(array(sorted(set(fact_keys)), type_=Text))))
    rows = list(await session.scalars(
        select(ToolMemory)
        .where(
            ToolMemory.account_id == account_id,
            ToolMemory.conversation_id == conversation_id,
            related,
        )
        .order_by(ToolMemory.seq.desc(), ToolMemory.id)
        .limit(RELATED_LIMIT)
    ))
    rows.reverse()
    cited = sorted({artifact_id for row in rows for artifact_id in row.source_artifact_ids})
    statuses: dict[str, ToolCallStatus] = {}
    if cited:
        found = await session.execute(
            select(ToolArtifact.id, ToolArtifact.status).where(
                ToolArtifact.account_id == account_id, ToolArtifact.id.in_(cited)
            )
        )
        statuses = {row.id: ToolCallStatus(row.status) for row in found}
    return [to_tool_memory(row) for row in rows], statuses


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
        status: the resolution status found.
        repair_attempts: the number of repair attempts so far; unchanged when ``None``.

    Raises:
        NotFoundError: no such memory in the account.
    """
    row = await get_row(session, ToolMemory, account_id, memory_id, for_update=True)
    status = ResolutionStatus(status)
    if row.resolution != status.value:
        # The change is an event of the conversation: an assembly whose snapshot predates it (its replay
        # included) reads the status it replaced (store.convert.resolution_at).
        seq = await allocate_seq(session, account_id, row.conversation_id)
        row.resolution_history = [*row.resolution_history, {"seq": seq, "replaced": row.resolution}]
        row.resolution = status.value
    if repair_attempts is not None:
        row.repair_attempts = repair_attempts
    await session.flush()
    return to_tool_memory(row)
