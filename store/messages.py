"""Transcript messages and model runs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from policy.enums import RuntimeKind, strictest_privacy
from policy.records import MessageRecord
from store._sql import allocate_seq, get_row, insert_once, new_id, translate_errors, utcnow
from store.convert import to_message, to_model_run
from store.errors import IntegrityViolation, NotFoundError
from store.models import Message, ModelRun
from store.records import ModelRunRecord, ModelRunStatus
from store.taint import run_privacy
from store.writes import NewMessage


@translate_errors
async def append_message(
    session: AsyncSession, account_id: str, conversation_id: str, message: NewMessage
) -> MessageRecord:
    """Append a message to its branch, with the conversation's next ``seq``.

    Safe to retry with the same ``message_id``: the stored message is returned and no ``seq`` is spent.

    Raises:
        NotFoundError: unknown conversation, branch, participant or run.
    """
    message_id, privacy, model_run_id = message.message_id, message.privacy, message.model_run_id
    if message_id is not None:
        existing = await session.scalar(
            select(Message).where(Message.account_id == account_id, Message.id == message_id)
        )
        if existing is not None:
            return to_message(existing)
    if model_run_id is not None:
        shown = await run_privacy(session, account_id, model_run_id)
        privacy = strictest_privacy([privacy, shown]) if shown is not None else privacy
    seq = await allocate_seq(session, account_id, conversation_id)
    values = replace(message, privacy=privacy).row(seq)
    message_id = values["id"]
    await insert_once(session, Message, {**values, "account_id": account_id, "conversation_id": conversation_id})
    try:
        return await get_message(session, account_id, message_id)
    except NotFoundError:
        raise IntegrityViolation(f"message id {message_id!r} is taken") from None


@translate_errors
async def get_message(session: AsyncSession, account_id: str, message_id: str) -> MessageRecord:
    """A message by id.

    Raises:
        NotFoundError: no such message in the account.
    """
    return to_message(await get_row(session, Message, account_id, message_id))


@translate_errors
async def start_model_run(
    session: AsyncSession,
    account_id: str,
    conversation_id: str,
    branch_id: str,
    participant_id: str,
    *,
    runtime_kind: RuntimeKind = RuntimeKind.CHAT,
    provider: str | None = None,
    model: str | None = None,
    workflow_id: str | None = None,
    parent_model_run_id: str | None = None,
    model_run_id: str | None = None,
) -> ModelRunRecord:
    """Record that a model run started; safe to retry with the same id.

    Args:
        branch_id: the branch the run generates on.
        participant_id: the participant the model speaks for.
        workflow_id: the Temporal workflow driving the run.
        parent_model_run_id: for a subagent run, the run that spawned it.
        model_run_id: the id to use; a fresh one when ``None``.

    Returns:
        The run, ``status="running"``.

    Raises:
        NotFoundError: unknown conversation, branch, participant or parent run.
    """
    model_run_id = model_run_id or new_id()
    await insert_once(
        session,
        ModelRun,
        {
            "id": model_run_id,
            "account_id": account_id,
            "conversation_id": conversation_id,
            "branch_id": branch_id,
            "participant_id": participant_id,
            "runtime_kind": RuntimeKind(runtime_kind).value,
            "provider": provider,
            "model": model,
            "workflow_id": workflow_id,
            "parent_model_run_id": parent_model_run_id,
            "status": "running",
        },
    )
    try:
        return await get_model_run(session, account_id, model_run_id)
    except NotFoundError:
        raise IntegrityViolation(f"model run id {model_run_id!r} is taken") from None


@translate_errors
async def finish_model_run(
    session: AsyncSession,
    account_id: str,
    model_run_id: str,
    *,
    status: ModelRunStatus,
    message_id: str | None = None,
    usage: Mapping[str, Any] | None = None,
    error: str | None = None,
    finished_at: datetime | None = None,
) -> ModelRunRecord:
    """Record the outcome of a model run.

    Args:
        status: ``succeeded``, ``failed`` or ``cancelled``.
        message_id: the message the run produced.
        usage: token usage as the provider reported it.
        error: what went wrong, for a failed run.
        finished_at: when it finished; now when ``None``.

    Raises:
        NotFoundError: unknown run (or message).
        IntegrityViolation: ``status`` is not a final status.
    """
    if status == "running":
        raise IntegrityViolation("finish_model_run needs a final status")
    run = await get_row(session, ModelRun, account_id, model_run_id, for_update=True)
    run.status = status
    run.message_id = message_id if message_id is not None else run.message_id
    run.usage = dict(usage) if usage is not None else run.usage
    run.error = error
    run.finished_at = finished_at or utcnow()
    await session.flush()
    return to_model_run(run)


@translate_errors
async def get_model_run(session: AsyncSession, account_id: str, model_run_id: str) -> ModelRunRecord:
    """A model run by id.

    Raises:
        NotFoundError: no such run in the account.
    """
    return to_model_run(await get_row(session, ModelRun, account_id, model_run_id))


@translate_errors
async def list_model_runs(
    session: AsyncSession,
    account_id: str,
    conversation_id: str | None = None,
    *,
    limit: int = 500,
    with_assembly: bool = False,
) -> list[ModelRunRecord]:
    """Model runs of the account, or of one conversation, oldest first.

    Args:
        conversation_id: restrict to one conversation.
        limit: at most this many (the most recent ones).
        with_assembly: only runs whose context assembly is stored (the limit counts these only).

    Returns:
        The runs, ordered by start time (then id).
    """
    stmt = select(ModelRun).where(ModelRun.account_id == account_id)
    if conversation_id is not None:
        stmt = stmt.where(ModelRun.conversation_id == conversation_id)
    if with_assembly:
        stmt = stmt.where(ModelRun.context_assembly_id.is_not(None))
    rows = list(await session.scalars(stmt.order_by(ModelRun.started_at.desc(), ModelRun.id.desc()).limit(limit)))
    return [to_model_run(row) for row in reversed(rows)]
