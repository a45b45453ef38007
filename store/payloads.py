"""Capturing and reading tool payloads across Postgres and S3.

Small payloads are stored inline in the artifact row; larger ones go to the
artifact store first and the row records the key. The object is written
before the row, so a committed row never points at a missing object, and its
``stored_objects`` row is claimed in the same transaction. The live capture
(:func:`activities.ingest.ingest_tool_result`) records the write before this
transaction opens, so an object left behind by a rolled-back transaction (a
retry of the tool may return other bytes) is still known to the graph, and
swept once its grace period has passed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from policy.enums import PrivacyClass, at_least
from policy.records import ArtifactRecord, canonical_json
from policy.retention import RAW_ARCHIVED_REASON, RAW_REDACTED_REASON, RetentionState
from store._sql import translate_errors
from store.artifacts import ArtifactStore
from store.errors import AccountDeletedError, ArtifactIntegrityError, ArtifactRetainedError, NotFoundError
from store.models import Account, ToolArtifact, ToolCall
from store.objects import claim_objects
from store.tools import INLINE_PAYLOAD_MAX, ArtifactCapture, get_artifact_for_tool_call, insert_artifact


@translate_errors
async def capture_artifact(
    session: AsyncSession,
    artifacts: ArtifactStore,
    account_id: str,
    tool_call_id: str,
    payload: bytes,
    *,
    content_type: str,
    inline_max: int = INLINE_PAYLOAD_MAX,
    **fields: Any,
) -> ArtifactRecord:
    """Store a tool payload (inline or in S3) and capture its artifact row, once.

    A repeated capture of the same tool call returns the first artifact
    without touching S3.

    Args:
        artifacts: the S3 artifact store.
        tool_call_id: the tool call whose result this is.
        payload: the raw result bytes.
        inline_max: payloads up to this size stay in Postgres.
        **fields: further fields of :class:`store.tools.ArtifactCapture`
            (``status``, ``error``, ``privacy``, ``result_tokens`` ...).

    Raises:
        NotFoundError: no such tool call in the account.
        AccountDeletedError: the account is being deleted; nothing was written.
        ArtifactStoreError: S3 failed (``ArtifactStoreUnavailableError``: retry).
    """
    try:
        return await get_artifact_for_tool_call(session, account_id, tool_call_id)
    except NotFoundError:
        pass
    # The account's row is read in the same statement, FOR KEY SHARE: an account being deleted gets no new
    # object (its rows would be refused after the put, leaving the object behind), and a deletion starting
    # now waits for this transaction (store.account_deletion.mark_deleting).
    found = (await session.execute(
        select(ToolCall, Account.deleting_at).join(Account, Account.id == ToolCall.account_id)
        .where(ToolCall.account_id == account_id, ToolCall.id == tool_call_id)
        .with_for_update(key_share=True, of=Account)
    )).first()
    if found is None:
        raise NotFoundError("tool_call", tool_call_id)
    call, deleting = found
    if deleting is not None:
        raise AccountDeletedError(f"account {account_id!r} is being deleted: nothing may be captured for it")
    arguments: Mapping[str, Any] = fields.pop("arguments", None) or call.arguments
    # Never looser than the call (ArtifactCapture.row raises it the same way): the object's metadata agrees.
    privacy = at_least(fields.get("privacy") or call.privacy, PrivacyClass(call.privacy))
    digest = hashlib.sha256(payload).hexdigest()
    common = {
        "content_type": content_type,
        "sha256": digest,
        "result_bytes": len(payload),
        "arguments_bytes": len(canonical_json(dict(arguments)).encode()),
        "arguments": arguments,
        **fields,
    }
    if len(payload) <= inline_max:
        capture = ArtifactCapture(storage="inline", inline_payload=payload, **common)
    else:
        ref = await artifacts.put(account_id, payload, content_type=content_type, privacy=privacy)
        capture = ArtifactCapture(storage="object", storage_key=ref.key, **common)
        artifact = await insert_artifact(session, account_id, tool_call_id, capture)
        await claim_objects(session, account_id, tool_call_id, [ref], privacy)
        return artifact
    return await insert_artifact(session, account_id, tool_call_id, capture)


@translate_errors
async def read_artifact_payload(
    session: AsyncSession,
    artifacts: ArtifactStore | None,
    account_id: str,
    artifact_id: str,
) -> bytes:
    """The verified payload of an artifact, wherever it is stored.

    Args:
        artifacts: the S3 artifact store (may be ``None`` if every payload is inline).

    Returns:
        The payload bytes, only if they hash to the recorded sha256.

    Raises:
        NotFoundError: no such artifact in the account.
        ArtifactNotFoundError: the S3 object is missing.
        ArtifactRetainedError: retention archived or removed the bytes (an ``ArtifactNotFoundError``).
        ArtifactIntegrityError: the bytes do not match the recorded hash.
    """
    row = (
        await session.execute(
            select(
                ToolArtifact.storage,
                ToolArtifact.storage_key,
                ToolArtifact.sha256,
                ToolArtifact.inline_payload,
                ToolArtifact.retention_state,
            ).where(ToolArtifact.account_id == account_id, ToolArtifact.id == artifact_id)
        )
    ).first()
    if row is None:
        raise NotFoundError("artifact", artifact_id)
    if row.retention_state != RetentionState.LIVE.value:
        reason = RAW_ARCHIVED_REASON if row.retention_state == RetentionState.ARCHIVED.value else RAW_REDACTED_REASON
        raise ArtifactRetainedError(artifact_id, reason)
    if row.storage == "inline":
        payload = bytes(row.inline_payload)
        actual = hashlib.sha256(payload).hexdigest()
        if actual != row.sha256:
            raise ArtifactIntegrityError(f"inline:{artifact_id}", row.sha256, actual)
        return payload
    if artifacts is None:
        raise ValueError("artifact is stored in S3 but no ArtifactStore was given")
    return await artifacts.get(account_id, row.storage_key, row.sha256)
