"""Continuation checkpoints: resumable loop and batch state, with the graph records it relies on."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from policy.enums import PrivacyClass, VisibilityScope, at_least
from policy.records import CheckpointRecord
from store._sql import allocate_seq, get_row, insert_once, new_id, translate_errors
from store.convert import to_checkpoint
from store.errors import IntegrityViolation, NotFoundError
from store.models import ContinuationCheckpoint
from store.taint import records_privacy

CheckpointKind = Literal["tool_loop", "subagent_batch", "parent_resume", "deferred_wait"]
"""Kinds of continuation checkpoints."""


@translate_errors
async def put_checkpoint(
    session: AsyncSession,
    account_id: str,
    conversation_id: str,
    branch_id: str,
    participant_id: str,
    kind: CheckpointKind,
    *,
    state: Mapping[str, Any],
    references: Sequence[str] = (),
    model_run_id: str | None = None,
    visibility: VisibilityScope = VisibilityScope.PARTICIPANT_PRIVATE,
    privacy: PrivacyClass = PrivacyClass.USER,
    checkpoint_id: str | None = None,
) -> CheckpointRecord:
    """Store a continuation checkpoint; idempotent on ``checkpoint_id``.

    Args:
        participant_id: the participant whose work continues.
        kind: ``tool_loop``, ``subagent_batch``, ``parent_resume`` or ``deferred_wait``.
        state: small structured state (steps done, next step ...).
        references: graph ids the continuation relies on (memories, artifacts, tool calls,
            checkpoints, model runs ...).
        model_run_id: the run that wrote it.
        visibility: who may see it.
        privacy: its declared class; stored raised to the strictest class of ``references``
            (:func:`store.taint.records_privacy`; a model run counts as what it was shown, an id
            that names no record fails closed), so a checkpoint is never looser than what it relies on.
        checkpoint_id: the id to use; a fresh one when ``None``.

    Raises:
        NotFoundError: unknown conversation, branch, participant or run.
        IntegrityViolation: unknown kind, or the id is taken elsewhere.
    """
    if checkpoint_id is not None:
        existing = await session.scalar(
            select(ContinuationCheckpoint).where(
                ContinuationCheckpoint.account_id == account_id, ContinuationCheckpoint.id == checkpoint_id
            )
        )
        if existing is not None:
            return to_checkpoint(existing)
    # Taint: a continuation is built from the records it references; never looser than any of them.
    privacy = at_least(privacy, await records_privacy(session, account_id, references, what="checkpoint reference",
                                                      refuse_unknown=False))
    seq = await allocate_seq(session, account_id, conversation_id)
    checkpoint_id = checkpoint_id or new_id()
    values = {
        "id": checkpoint_id,
        "account_id": account_id,
        "conversation_id": conversation_id,
        "branch_id": branch_id,
        "seq": seq,
        "participant_id": participant_id,
        "kind": kind,
        "state": dict(state),
        "references": list(references),
        "model_run_id": model_run_id,
        "visibility": VisibilityScope(visibility).value,
        "privacy": PrivacyClass(privacy).value,
    }
    await insert_once(session, ContinuationCheckpoint, values)
    try:
        return await get_checkpoint(session, account_id, checkpoint_id)
    except NotFoundError:
        raise IntegrityViolation(f"checkpoint id {checkpoint_id!r} is taken") from None


@translate_errors
async def get_checkpoint(session: AsyncSession, account_id: str, checkpoint_id: str) -> CheckpointRecord:
    """A continuation checkpoint by id.

    Raises:
        NotFoundError: no such checkpoint in the account.
    """
    return to_checkpoint(await get_row(session, ContinuationCheckpoint, account_id, checkpoint_id))
