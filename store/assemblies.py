"""Saving and reading context assemblies with their policy decisions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from sqlalchemy import insert, select, tuple_, update
from sqlalchemy.ext.asyncio import AsyncSession

from policy.enums import RuntimeKind
from policy.records import (
    ContextAssemblyRecord,
    EpochRecord,
    GenerationBoundary,
    PolicyDecisionRecord,
    PreviousAssembly,
)
from policy.retention import KEEP, RetentionRule
from store._sql import get_row, insert_once, new_id, translate_errors
from store.convert import to_stored_assembly
from store.errors import IntegrityViolation
from store.models import ContextAssembly, ModelRun, PolicyDecision
from store.records import AssemblyTimings, ReplayInputs, StoredContextAssembly


class SavedAssembly(NamedTuple):
    """What :func:`save_context_assembly` did."""

    assembly_id: str
    """The assembly's id."""
    created: bool
    """This call wrote it; ``False`` for a retry that found the first write (which stands)."""


@translate_errors
async def save_context_assembly(
    session: AsyncSession,
    account_id: str,
    boundary: GenerationBoundary,
    record: ContextAssemblyRecord,
    decisions: Sequence[PolicyDecisionRecord],
    messages: Sequence[Mapping[str, Any]],
    *,
    timings: AssemblyTimings | None = None,
    assembly_id: str | None = None,
    replay: ReplayInputs | None = None,
    retention: RetentionRule = KEEP,
) -> SavedAssembly:
    """Persist what one model call saw and every decision behind it.

    Safe to retry with the same ``assembly_id`` (the first write wins). When
    the boundary names a model run, the run is linked to the assembly.

    Args:
        account_id: the owning account; must equal ``boundary.account_id``.
        boundary: the generation boundary the assembly was made for.
        record: the policy's assembly record.
        decisions: the policy's decisions, in order.
        messages: the provider messages exactly as sent (OpenAI format).
        timings: how long each phase took.
        assembly_id: the id to use; a fresh one when ``None``.
        replay: what recomputing the assembly needs (its boundary must be ``boundary``); ``None``
            stores the boundary only, and the assembly is not replayable.
        retention: the rule its trace is kept under (:func:`policy.retention.effective_rule`), written by
            the insert (a retry's first write stands, rule included).

    Returns:
        The assembly id, and whether this call wrote it (what a retry must not count again).

    Raises:
        NotFoundError: unknown conversation, branch, participant or run.
        IntegrityViolation: the boundary belongs to another account.
    """
    if boundary.account_id != account_id:
        raise IntegrityViolation("boundary.account_id does not match account_id")
    if replay is not None and replay.boundary != boundary:
        raise IntegrityViolation("replay.boundary does not match boundary")
    timings = timings or AssemblyTimings()
    assembly_id = assembly_id or new_id()
    values = record.model_dump(mode="json")
    values.update(
        id=assembly_id,
        account_id=account_id,
        conversation_id=boundary.conversation_id,
        branch_id=boundary.branch_id,
        participant_id=boundary.participant_id,
        model_run_id=boundary.model_run_id,
        runtime_kind=RuntimeKind(boundary.runtime_kind).value,
        provider_route=boundary.provider_route,
        generation_at=boundary.now,
        messages=[dict(m) for m in messages],
        boundary=boundary.model_dump(mode="json"),
        retention=retention.kind.value,
        retention_days=retention.after_days,
        **timings.model_dump(),
    )
    if replay is not None:
        values.update(candidate_limits=dict(replay.candidate_limits), user_memory_seq=replay.user_memory_seq,
                      user_memory_ids=list(replay.user_memory_ids),
                      previous_assembly_id=replay.previous_assembly_id)
    if not await insert_once(session, ContextAssembly, values):
        # A retry: the first write stands, decisions included.
        await get_row(session, ContextAssembly, account_id, assembly_id)
        return SavedAssembly(assembly_id, created=False)
    if decisions:
        await session.execute(
            insert(PolicyDecision),
            [
                {
                    **decision.model_dump(mode="json"),
                    "context_assembly_id": assembly_id,
                    "ordinal": ordinal,
                    "account_id": account_id,
                    "conversation_id": boundary.conversation_id,
                }
                for ordinal, decision in enumerate(decisions)
            ],
        )
    if boundary.model_run_id is not None:
        await session.execute(
            update(ModelRun)
            .where(ModelRun.account_id == account_id, ModelRun.id == boundary.model_run_id)
            .values(context_assembly_id=assembly_id)
            .execution_options(synchronize_session=False)
        )
    return SavedAssembly(assembly_id, created=True)


@translate_errors
async def get_context_assembly(
    session: AsyncSession,
    account_id: str,
    assembly_id: str,
    *,
    with_messages: bool = False,
) -> StoredContextAssembly:
    """An assembly with its decisions (and, on request, its provider messages).

    Args:
        with_messages: also load the provider messages (can be large).

    Returns:
        The stored assembly; ``messages`` is ``None`` unless requested.

    Raises:
        NotFoundError: no such assembly in the account.
    """
    row = await get_row(session, ContextAssembly, account_id, assembly_id)
    decisions = list(
        await session.scalars(
            select(PolicyDecision)
            .where(PolicyDecision.account_id == account_id, PolicyDecision.context_assembly_id == assembly_id)
            .order_by(PolicyDecision.ordinal)
        )
    )
    messages = None
    if with_messages:
        messages = await session.scalar(
            select(ContextAssembly.messages).where(
                ContextAssembly.account_id == account_id, ContextAssembly.id == assembly_id
            )
        )
    return to_stored_assembly(row, decisions, messages)


@translate_errors
async def list_context_assemblies(
    session: AsyncSession,
    account_id: str,
    *,
    conversation_id: str | None = None,
    model_run_id: str | None = None,
    limit: int = 100,
) -> list[StoredContextAssembly]:
    """Assemblies of the account (filtered), newest first, without messages.

    Args:
        conversation_id: restrict to one conversation.
        model_run_id: restrict to one model run.
        limit: at most this many.
    """
    stmt = select(ContextAssembly).where(ContextAssembly.account_id == account_id)
    if conversation_id is not None:
        stmt = stmt.where(ContextAssembly.conversation_id == conversation_id)
    if model_run_id is not None:
        stmt = stmt.where(ContextAssembly.model_run_id == model_run_id)
    stmt = stmt.order_by(ContextAssembly.created_at.desc(), ContextAssembly.id).limit(limit)
    rows = list(await session.scalars(stmt))
    decisions: dict[str, list[PolicyDecision]] = {row.id: [] for row in rows}
    if rows:
        found = await session.scalars(
            select(PolicyDecision)
            .where(PolicyDecision.account_id == account_id, PolicyDecision.context_assembly_id.in_(list(decisions)))
            .order_by(PolicyDecision.context_assembly_id, PolicyDecision.ordinal)
        )
        for decision in found:
            decisions[decision.context_assembly_id].append(decision)
    return [to_stored_assembly(row, decisions[row.id]) for row in rows]


@translate_errors
async def previous_assembly(
    session: AsyncSession,
    account_id: str,
    branch_id: str,
    participant_id: str,
    *,
    before_seq: int,
) -> PreviousAssembly | None:
    """The participant's latest assembly on a branch before a snapshot: what a call at that snapshot continues.

    Args:
        before_seq: only assemblies of snapshots strictly before this ``seq``, so assembling a snapshot
            again (a retried activity, an audit's replay) finds the same previous call as the first time.

    Returns:
        The previous assembly's epoch and boundary, or ``None`` when there is none or it predates epochs.
    """
    found = await find_previous_assembly(session, account_id, branch_id, participant_id, before_seq=before_seq)
    return None if found is None else found[1]


@translate_errors
async def find_previous_assembly(
    session: AsyncSession,
    account_id: str,
    branch_id: str,
    participant_id: str,
    *,
    before_seq: int,
) -> tuple[str, PreviousAssembly] | None:
    """:func:`previous_assembly` with the previous assembly's id (which an assembly stores, for replay).

    Returns:
        ``(assembly id, previous)``, or ``None`` when there is none or it predates epochs.
    """
    stmt = select(ContextAssembly).where(
        ContextAssembly.account_id == account_id,
        ContextAssembly.branch_id == branch_id,
        ContextAssembly.participant_id == participant_id,
        ContextAssembly.snapshot_seq < before_seq,
    )
    row = await session.scalar(
        stmt.order_by(ContextAssembly.snapshot_seq.desc(), ContextAssembly.created_at.desc(), ContextAssembly.id)
        .limit(1)
    )
    if row is None or row.epoch is None:
        return None
    return row.id, _as_previous(row)


@translate_errors
async def previous_call_id(session: AsyncSession, account_id: str, assembly: StoredContextAssembly) -> str | None:
    """The id of the same participant's assembly on the same branch just before ``assembly`` (its previous
    call): the latest by ``(snapshot_seq, created_at)`` below ``assembly``'s, whatever its epoch.

    Returns:
        The id, or ``None`` when ``assembly`` is the participant's first on the branch.
    """
    return await session.scalar(
        select(ContextAssembly.id).where(
            ContextAssembly.account_id == account_id,
            ContextAssembly.branch_id == assembly.branch_id,
            ContextAssembly.participant_id == assembly.participant_id,
            ContextAssembly.id != assembly.id,
            tuple_(ContextAssembly.snapshot_seq, ContextAssembly.created_at)
            < tuple_(assembly.record.snapshot_seq, assembly.created_at),
        ).order_by(ContextAssembly.snapshot_seq.desc(), ContextAssembly.created_at.desc(), ContextAssembly.id.desc())
        .limit(1)
    )


@translate_errors
async def assembly_as_previous(session: AsyncSession, account_id: str, assembly_id: str) -> PreviousAssembly:
    """A stored assembly as what a later call continues (replay reads the one an assembly recorded).

    Raises:
        NotFoundError: no such assembly in the account.
        IntegrityViolation: the assembly has no epoch, so nothing could have continued it.
    """
    row = await get_row(session, ContextAssembly, account_id, assembly_id)
    if row.epoch is None:
        raise IntegrityViolation(f"assembly {assembly_id!r} has no epoch")
    return _as_previous(row)


def _as_previous(row: ContextAssembly) -> PreviousAssembly:
    return PreviousAssembly(
        snapshot_seq=row.snapshot_seq, policy_version=row.policy_version, branch_id=row.branch_id,
        provider_route=row.provider_route, runtime_kind=RuntimeKind(row.runtime_kind),
        epoch=EpochRecord.model_validate(row.epoch), generation_at=row.generation_at,
    )
