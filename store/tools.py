"""Tool calls (with their attempt history) and captured artifacts.

Both writes are idempotent on the natural key a retried activity repeats:
a tool call on the provider's ``call_id``, an artifact on its tool call.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from policy.enums import PrivacyClass, PromotionPolicy, ToolCallStatus, VisibilityScope, at_least
from policy.records import ArtifactRecord, ToolCallRecord, bounded_key
from policy.retention import KEEP, RetentionRule
from store._sql import allocate_seq, get_row, insert_once, new_id, translate_errors, utcnow
from store.convert import to_artifact, to_tool_call
from store.errors import IntegrityViolation, NotFoundError, PayloadTooLargeError
from store.models import ToolArtifact, ToolCall
from store.taint import run_privacy
from store.writes import NewToolCall, history_entry

INLINE_PAYLOAD_MAX = 64 * 1024
"""Largest payload kept inline in Postgres; larger ones go to the artifact store."""


async def _tool_call_row(session: AsyncSession, account_id: str, call_id: str) -> ToolCall | None:
    return await session.scalar(
        select(ToolCall)
        .where(ToolCall.account_id == account_id, ToolCall.call_id == bounded_key(call_id))
        .execution_options(populate_existing=True)
    )


@translate_errors
async def record_tool_call(
    session: AsyncSession, account_id: str, conversation_id: str, call: NewToolCall
) -> ToolCallRecord:
    """Record a tool call the model made; idempotent on ``call_id`` (a repeat returns the stored call, no ``seq``).

    The stored class is never looser than what the calling run was shown (:func:`store.taint.run_privacy`):
    the model may have copied any of it into the arguments, and everything produced from them (the
    artifact, a file the tool writes, the memory) inherits the call's class. An imported run with no
    recorded assembly adds nothing to the declared class.

    Raises:
        NotFoundError: unknown conversation, branch, participant or run.
    """
    # The provider's id is only the idempotency key (native messages name our row id): a long one, which
    # would not fit the unique index, is kept as its head and digest (NewToolCall.row).
    existing = await _tool_call_row(session, account_id, call.call_id)
    if existing is not None:
        return to_tool_call(existing)
    if call.model_run_id:
        shown = await run_privacy(session, account_id, call.model_run_id)
        call = replace(call, privacy=at_least(call.privacy or PrivacyClass.USER, shown))
    row = call.row(await allocate_seq(session, account_id, conversation_id))
    await insert_once(session, ToolCall, {**row, "account_id": account_id, "conversation_id": conversation_id})
    stored = await _tool_call_row(session, account_id, call.call_id)
    if stored is None:
        raise IntegrityViolation(f"tool call id {call.tool_call_id!r} is taken")
    return to_tool_call(stored)


@translate_errors
async def update_tool_call(
    session: AsyncSession,
    account_id: str,
    tool_call_id: str,
    *,
    status: ToolCallStatus,
    attempt: int | None = None,
    error: str | None = None,
    waiting_for: str | None = None,
    retry_critical: bool | None = None,
    at: datetime | None = None,
) -> ToolCallRecord:
    """Move a tool call to a new state and append it to the attempt history.

    Every update takes a new ``seq`` (stored as ``updated_seq`` and in the
    history entry), so an older snapshot still reads the state it saw.

    Args:
        tool_call_id: the tool call's row id.
        attempt: the attempt number; unchanged when ``None``.
        error: the error of this attempt; ``last_error`` keeps the latest one.
        waiting_for: what a deferred call waits for (cleared when ``None``).
        retry_critical: change the retry-critical flag; unchanged when ``None``.
        at: when it happened; now when ``None``.

    Raises:
        NotFoundError: no such tool call in the account.
        IntegrityViolation: ``attempt`` below 1.
    """
    if attempt is not None and attempt < 1:
        raise IntegrityViolation(f"attempt must be >= 1, got {attempt}")
    conversation_id = await session.scalar(
        select(ToolCall.conversation_id).where(ToolCall.account_id == account_id, ToolCall.id == tool_call_id)
    )
    if conversation_id is None:
        raise NotFoundError("tool_call", tool_call_id)
    # Conversation row first, tool call second: the same lock order as every insert.
    seq = await allocate_seq(session, account_id, conversation_id)
    row = await get_row(session, ToolCall, account_id, tool_call_id, for_update=True)
    status = ToolCallStatus(status)
    row.status = status.value
    row.attempts = attempt if attempt is not None else row.attempts
    row.last_error = error if error is not None else row.last_error
    row.waiting_for = waiting_for
    row.retry_critical = retry_critical if retry_critical is not None else row.retry_critical
    row.updated_seq = seq
    row.updated_at = at or utcnow()
    entry = history_entry(
        seq=seq,
        attempt=row.attempts,
        status=status,
        error=error,
        waiting_for=waiting_for,
        retry_critical=row.retry_critical,
        at=row.updated_at,
    )
    row.history = [*row.history, entry]
    await session.flush()
    return to_tool_call(row)


@translate_errors
async def get_tool_call(session: AsyncSession, account_id: str, tool_call_id: str) -> ToolCallRecord:
    """A tool call by row id.

    Raises:
        NotFoundError: no such tool call in the account.
    """
    return to_tool_call(await get_row(session, ToolCall, account_id, tool_call_id))


@translate_errors
async def get_tool_call_by_call_id(session: AsyncSession, account_id: str, call_id: str) -> ToolCallRecord:
    """A tool call by the provider's ``call_id``.

    Raises:
        NotFoundError: no such call id in the account.
    """
    row = await _tool_call_row(session, account_id, call_id)
    if row is None:
        raise NotFoundError("tool_call", call_id)
    return to_tool_call(row)


@translate_errors
async def get_tool_call_history(session: AsyncSession, account_id: str, tool_call_id: str) -> list[dict[str, Any]]:
    """The attempt history of a tool call, oldest first.

    Returns:
        ``[{seq, attempt, status, error, waiting_for, retry_critical, at}]``.

    Raises:
        NotFoundError: no such tool call in the account.
    """
    row = await get_row(session, ToolCall, account_id, tool_call_id)
    return [dict(entry) for entry in row.history]


async def _artifact_row(session: AsyncSession, account_id: str, tool_call_id: str) -> ToolArtifact | None:
    return await session.scalar(
        select(ToolArtifact)
        .where(ToolArtifact.account_id == account_id, ToolArtifact.tool_call_id == tool_call_id)
        .execution_options(populate_existing=True)
    )


def check_storage(
    storage: str, storage_key: str | None, inline_payload: bytes | None, sha256: str, result_bytes: int
) -> None:
    """Refuse storage fields that disagree, and inline bytes that do not match their hash or size.

    Raises:
        IntegrityViolation: the storage fields disagree, or the bytes do not match.
        PayloadTooLargeError: inline bytes over :data:`INLINE_PAYLOAD_MAX`.
    """
    if storage == "inline":
        if inline_payload is None:
            raise IntegrityViolation("inline storage needs inline_payload")
        if len(inline_payload) > INLINE_PAYLOAD_MAX:
            raise PayloadTooLargeError(f"{len(inline_payload)} bytes inline; maximum {INLINE_PAYLOAD_MAX}")
        if hashlib.sha256(inline_payload).hexdigest() != sha256.lower() or len(inline_payload) != result_bytes:
            raise IntegrityViolation("inline_payload does not match sha256/result_bytes")
    elif storage == "object":
        if not storage_key or inline_payload is not None:
            raise IntegrityViolation("object storage needs storage_key and no inline_payload")
    else:
        raise IntegrityViolation(f"unknown storage {storage!r}")


@dataclass(frozen=True)
class ArtifactCapture:
    """What capturing a tool's raw result records, besides what the tool call already says.

    Checked when built: storage fields that disagree, or inline bytes that do
    not match their hash or size, never reach a row. Call id, tool name, owner,
    run, branch and (unless given here) status, arguments, visibility and
    privacy are the tool call's.

    Raises:
        IntegrityViolation: the storage fields disagree, or the inline bytes
            do not match ``sha256``/``result_bytes``.
        PayloadTooLargeError: inline bytes over :data:`INLINE_PAYLOAD_MAX`.
    """

    content_type: str
    """MIME type of the payload."""
    sha256: str
    """Hex sha256 of the payload bytes."""
    result_bytes: int
    """Payload size."""
    arguments_bytes: int
    """Size of the canonical JSON arguments."""
    storage: Literal["inline", "object"]
    """``inline`` (bytes in Postgres) or ``object`` (in S3)."""
    storage_key: str | None = None
    """The S3 key, for ``object`` storage."""
    inline_payload: bytes | None = None
    """The bytes, for ``inline`` storage (at most :data:`INLINE_PAYLOAD_MAX`)."""
    result_tokens: int = 0
    """Tokens of the raw result as transcript replay shows it."""
    status: ToolCallStatus | None = None
    """The call's outcome; the tool call's status when ``None``."""
    arguments: Mapping[str, Any] | None = None
    """The arguments as executed; the tool call's when ``None``."""
    error: str | None = None
    """The tool's error text, for a failed call."""
    visibility: VisibilityScope | None = None
    """Defaults to the tool call's."""
    shared_with: Sequence[str] | None = None
    """Defaults to the tool call's."""
    privacy: PrivacyClass | None = None
    """Defaults to the tool call's; never looser than it (a looser one is raised to the call's)."""
    active_skills: Sequence[Any] = ()
    """Skills active when the tool ran."""
    tool_profile: str | None = None
    """The tool profile in force."""
    provider: str | None = None
    """Provider of the calling model."""
    model: str | None = None
    """The calling model."""
    runtime_meta: Mapping[str, Any] | None = None
    """Free-form runtime details (worker, durations ...)."""
    tool_version: str | None = None
    """Version of the tool implementation."""
    captured_at: datetime | None = None
    """Capture time; the time of writing when ``None``."""
    promotion: PromotionPolicy = PromotionPolicy.NONE
    """Promotion policy of a child run's artifact."""
    artifact_id: str | None = None
    """The id to use; a fresh one when ``None``."""
    retention: RetentionRule = KEEP
    """The rule the artifact is kept under (:func:`policy.retention.effective_rule`), written by the insert."""

    def __post_init__(self) -> None:
        check_storage(self.storage, self.storage_key, self.inline_payload, self.sha256, self.result_bytes)

    def row(self, call: ToolCall | Mapping[str, Any], seq: int) -> dict[str, Any]:
        """The artifact row (without account and conversation) for ``call``'s result at ``seq``.

        What :func:`insert_artifact` and bulk writes insert; ``call`` is the
        tool-call row, or its queued values in a bulk write.
        """
        of = call.__getitem__ if isinstance(call, Mapping) else lambda name: getattr(call, name)
        return {
            "id": self.artifact_id or new_id(),
            "tool_call_id": of("id"),
            "call_id": of("call_id"),
            "tool_name": of("name"),
            "status": ToolCallStatus(self.status or of("status")).value,
            "owner_participant_id": of("participant_id"),
            "model_run_id": of("model_run_id"),
            "runtime_kind": of("runtime_kind"),
            "branch_id": of("branch_id"),
            "seq": seq,
            "visibility": VisibilityScope(self.visibility or of("visibility")).value,
            "shared_with": list(self.shared_with if self.shared_with is not None else of("shared_with")),
            # Taint: a result is produced from its call's arguments, so it is never looser than the call.
            "privacy": at_least(self.privacy or of("privacy"), PrivacyClass(of("privacy"))).value,
            "content_type": self.content_type,
            "arguments": dict(self.arguments if self.arguments is not None else of("arguments")),
            "sha256": self.sha256.lower(),
            "result_bytes": self.result_bytes,
            "arguments_bytes": self.arguments_bytes,
            "result_tokens": self.result_tokens,
            "storage": self.storage,
            "storage_key": self.storage_key,
            "inline_payload": self.inline_payload,
            "error": self.error,
            "active_skills": list(self.active_skills),
            "tool_profile": self.tool_profile,
            "provider": self.provider,
            "model": self.model,
            "runtime_meta": dict(self.runtime_meta or {}),
            "tool_version": self.tool_version,
            "captured_at": self.captured_at or utcnow(),
            "promotion": PromotionPolicy(self.promotion).value,
            "retention": self.retention.kind.value,
            "retention_days": self.retention.after_days,
        }


@translate_errors
async def insert_artifact(
    session: AsyncSession,
    account_id: str,
    tool_call_id: str,
    capture: ArtifactCapture,
) -> ArtifactRecord:
    """Capture the raw result of a tool call, once.

    ``INSERT ... ON CONFLICT DO NOTHING`` on the tool call, then a read: a
    second capture of the same call returns the first artifact unchanged.

    Args:
        tool_call_id: the captured tool call (row id).
        capture: what the capture records (checked when it was built).

    Raises:
        NotFoundError: no such tool call in the account.
        IntegrityViolation: the artifact id is taken by another call.
    """
    existing = await _artifact_row(session, account_id, tool_call_id)
    if existing is not None:
        return to_artifact(existing)
    call = await get_row(session, ToolCall, account_id, tool_call_id)
    values = capture.row(call, await allocate_seq(session, account_id, call.conversation_id))
    await insert_once(session, ToolArtifact,
                      {**values, "account_id": account_id, "conversation_id": call.conversation_id})
    row = await _artifact_row(session, account_id, tool_call_id)
    if row is None:
        raise IntegrityViolation(f"artifact id {values['id']!r} is taken")
    return to_artifact(row)


@translate_errors
async def get_artifact(session: AsyncSession, account_id: str, artifact_id: str) -> ArtifactRecord:
    """An artifact's metadata by id.

    Raises:
        NotFoundError: no such artifact in the account.
    """
    return to_artifact(await get_row(session, ToolArtifact, account_id, artifact_id))


@translate_errors
async def get_artifact_for_tool_call(session: AsyncSession, account_id: str, tool_call_id: str) -> ArtifactRecord:
    """The artifact captured for a tool call.

    Raises:
        NotFoundError: the call has no artifact (or is not in the account).
    """
    row = await _artifact_row(session, account_id, tool_call_id)
    if row is None:
        raise NotFoundError("artifact", f"tool_call:{tool_call_id}")
    return to_artifact(row)


@translate_errors
async def get_artifact_arguments(session: AsyncSession, account_id: str, artifact_id: str) -> dict[str, Any]:
    """The raw arguments stored with an artifact.

    Raises:
        NotFoundError: no such artifact in the account.
    """
    arguments = await session.scalar(
        select(ToolArtifact.arguments).where(ToolArtifact.account_id == account_id, ToolArtifact.id == artifact_id)
    )
    if arguments is None:
        raise NotFoundError("artifact", artifact_id)
    return dict(arguments)


@translate_errors
async def get_inline_payload(session: AsyncSession, account_id: str, artifact_id: str) -> bytes | None:
    """The inline bytes of an artifact, or ``None`` for one stored in S3.

    Not verified here; :func:`store.payloads.read_artifact_payload` checks
    the hash for both storage kinds.

    Raises:
        NotFoundError: no such artifact in the account.
    """
    row = (
        await session.execute(
            select(ToolArtifact.storage, ToolArtifact.inline_payload).where(
                ToolArtifact.account_id == account_id, ToolArtifact.id == artifact_id
            )
        )
    ).first()
    if row is None:
        raise NotFoundError("artifact", artifact_id)
    return row.inline_payload if row.storage == "inline" else None
