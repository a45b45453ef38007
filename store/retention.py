"""Applying retention rules: one bounded batch of one record kind at a time.

:func:`policy.retention.retention_action` decides; this module applies the
answer to the rows and objects, in batches of at most ``limit`` rows walked in
id order from a cursor (``after_id``), so a collection is any number of short
steps, each safe to repeat after a crash:

* every step looks its rows up again and skips what is already done (the
  rule's end state is recorded on the row, a deleted row is gone);
* Postgres is changed *after* the objects it names: memories are marked
  ``missing_source`` first, then objects are removed, then the artifact row,
  so a crash in between leaves a row that the next run finds and finishes,
  never a row pointing at an object that was removed without a trace;
* an object is removed only when no other row still needs it (objects are
  content-addressed per account, so two artifacts with the same bytes share
  one): :func:`object_still_needed` counts the references at delete time.

A generated file (``files.write``: its artifact is a handle, the bytes are
another object) is not collected while it is cited: a message quotes its
sha256 (the handle's URI holds it) or the artifact id, or a live memory other
than its own, or a checkpoint, refers to it. It stays, untouched, and is
counted as ``kept_cited``; a later run collects it once the citations are gone.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from datetime import datetime
from typing import Any

from sqlalchemy import Select, String, case, cast, column, delete, exists, func, literal, or_, select, update, values
from sqlalchemy.ext.asyncio import AsyncSession

from policy.derive import FILE_CONTENT_TYPE
from policy.enums import ResolutionStatus
from policy.records import canonical_json
from policy.retention import (
    POINTER_REMOVED,
    REDACTED_MARKER,
    RecordKind,
    RetentionAction,
    RetentionClass,
    RetentionRule,
    RetentionSpec,
    RetentionState,
    ERROR_REMOVED,
    forgotten_call,
    forgotten_memory,
    redacted_arguments,
    retention_action,
    scrubbed_reason,
)
from store._sql import translate_errors
from store.artifacts import ArtifactStore, object_key
from store.models import (
    ContextAssembly,
    ContinuationCheckpoint,
    EvidenceRequest,
    Message,
    Participant,
    PolicyDecision,
    ToolArtifact,
    ToolCall,
    ToolMemory,
)
from store.errors import StoreError
from store.objects import forget_call_objects, object_lock, rows_naming
from store.payloads import read_artifact_payload
from store.records import StoreRecord

logger = logging.getLogger(__name__)

ARCHIVE_SEGMENT = "archive"
"""Archived bytes live under ``accounts/<account>/archive/sha256/<hex>``: still the account's prefix
(so account deletion and the account check cover them), a prefix a bucket lifecycle rule can move to a
colder storage class."""


def archive_key(account_id: str, sha256: str) -> str:
    """Where an archived payload lives."""
    return f"accounts/{account_id}/{ARCHIVE_SEGMENT}/sha256/{sha256.lower()}"


class RetentionBatch(StoreRecord):
    """What one batch did."""

    last_id: str | None
    """The cursor for the next batch (``None``: nothing was scanned)."""
    scanned: int
    """Rows looked at."""
    done: bool
    """No rows left after the cursor."""
    actions: dict[str, int]
    """Rows per action applied (``delete``, ``archive``, ..., ``kept_cited``)."""


_TABLES: dict[RecordKind, Any] = {
    RecordKind.ARTIFACT: ToolArtifact,
    RecordKind.MEMORY: ToolMemory,
    RecordKind.TRACE: ContextAssembly,
}


# --------------------------------------------------------------------------- the rule a record is written with


@translate_errors
async def participant_retention(session: AsyncSession, account_id: str, participant_id: str) -> RetentionSpec | None:
    """The retention override of a participant's agent (stored in its ``config``), if any."""
    config = await session.scalar(select(Participant.config).where(
        Participant.account_id == account_id, Participant.id == participant_id))
    found = (config or {}).get("retention")
    return RetentionSpec.model_validate(found) if found else None


# --------------------------------------------------------------------------- reference counting


async def object_still_needed(session: AsyncSession, artifacts: ArtifactStore, account_id: str, key: str, *,
                              except_artifact: str | None, except_tool_call: str | None = None,
                              except_object_row: str | None = None) -> bool:
    """Whether a row other than the ones being released still refers to the object under ``key``.

    References are artifact rows storing their payload there (live or archived),
    stored-object rows (:mod:`store.objects`: a write recorded before its put, claimed
    or still pending) and generated-file handles naming its sha256 (those captured before
    writes were recorded), in the one account whose prefix the key is under (keys are
    never shared across accounts). Call it holding :func:`store.objects.object_lock` on the
    key, so no write of the same bytes is recorded between this answer and the delete.

    Args:
        artifacts: the artifact store (to read legacy file handles).
        except_artifact: the artifact being released (``None``: none).
        except_tool_call: the call whose stored-object rows are being released.
        except_object_row: the one stored-object row being swept.
    """
    stored = await session.scalar(select(func.count()).select_from(ToolArtifact).where(
        ToolArtifact.account_id == account_id, ToolArtifact.storage_key == key,
        *([ToolArtifact.id != except_artifact] if except_artifact is not None else [])))
    if stored:
        return True
    if await rows_naming(session, account_id, key, except_tool_call=except_tool_call, except_row=except_object_row):
        return True
    sha256 = key.rsplit("/", 1)[-1]
    handles = await session.scalars(select(ToolArtifact.id).where(
        ToolArtifact.account_id == account_id, ToolArtifact.content_type == FILE_CONTENT_TYPE,
        *([ToolArtifact.id != except_artifact] if except_artifact is not None else []),
        ToolArtifact.retention_state == RetentionState.LIVE.value))
    for handle_id in handles.all():
        if await _handle_sha256(session, artifacts, account_id, handle_id) == sha256:
            return True
    return False


async def _handle_sha256(session: AsyncSession, artifacts: ArtifactStore, account_id: str,
                         artifact_id: str) -> str | None:
    """The sha256 a generated-file handle names (``None``: its bytes are unreadable or not a handle)."""
    try:
        handle = json.loads(await read_artifact_payload(session, artifacts, account_id, artifact_id))
    except (StoreError, ValueError):
        return None
    value = handle.get("sha256") if isinstance(handle, dict) else None
    return value.lower() if isinstance(value, str) else None


async def files_cited_by_messages(session: AsyncSession, files: list[tuple[str, str, str]]) -> set[str]:
    """Which generated files a message quotes, for a whole batch in one query.

    Args:
        files: ``(account_id, artifact_id, sha256)`` of the files due for deletion.

    Returns:
        The artifact ids of the files some message of their account quotes: the sha256 (the handle's
        URI holds it) in its text or its tool calls, or the artifact id in its text.
    """
    if not files:
        return set()
    refs = values(column("account_id", String), column("artifact_id", String), column("sha_pattern", String),
                  column("id_pattern", String), name="refs").data(
        [(account_id, artifact_id, f"%{sha256}%", f"%{artifact_id}%") for account_id, artifact_id, sha256 in files])
    quoted = exists().where(Message.account_id == refs.c.account_id, or_(
        Message.content.like(refs.c.sha_pattern), Message.content.like(refs.c.id_pattern),
        cast(Message.tool_calls, String).like(refs.c.sha_pattern)))
    return set((await session.scalars(select(refs.c.artifact_id).where(quoted))).all())


async def file_handle_cited(session: AsyncSession, account_id: str, artifact_id: str, sha256: str,
                            own_memory_id: str | None, *, quoted: bool | None = None) -> bool:
    """Whether a generated file is still cited: by a message, a live memory other than its own, or a checkpoint.

    ``quoted`` is the batch's answer for the messages (:func:`files_cited_by_messages`); ``None`` asks here.
    """
    if quoted is None:
        quoted = artifact_id in await files_cited_by_messages(session, [(account_id, artifact_id, sha256)])
    if quoted:
        return True
    memories = select(func.count()).select_from(ToolMemory).where(
        ToolMemory.account_id == account_id, ToolMemory.superseded_by.is_(None),
        ToolMemory.source_artifact_ids.contains([artifact_id]))
    if own_memory_id is not None:
        memories = memories.where(ToolMemory.id != own_memory_id)
    if await session.scalar(memories):
        return True
    refs = [artifact_id, *([own_memory_id] if own_memory_id else [])]
    checkpoint = await session.scalar(select(func.count()).select_from(ContinuationCheckpoint).where(
        ContinuationCheckpoint.account_id == account_id,
        or_(*(ContinuationCheckpoint.references.contains([ref]) for ref in refs))))
    return bool(checkpoint)


# --------------------------------------------------------------------------- one batch


_END_STATE = {RetentionAction.REDACT: RetentionState.REDACTED, RetentionAction.HASH_ONLY: RetentionState.HASH_ONLY}
"""The state a row is left in by an action that keeps it."""


def _due(table: Any, after_id: str | None, limit: int) -> Select[Any]:
    query = select(table).where(table.retention != RetentionClass.KEEP.value).order_by(table.id).limit(limit)
    return query.where(table.id > after_id) if after_id is not None else query


@translate_errors
async def collect_batch(
    sessions: Any,
    artifacts: ArtifactStore,
    kind: RecordKind,
    now: datetime,
    *,
    after_id: str | None = None,
    limit: int = 200,
    own_memory_id: Any = None,
) -> RetentionBatch:
    """Apply retention to at most ``limit`` rows of one kind after ``after_id``, across accounts.

    Args:
        sessions: the session factory (each row is applied in its own short transactions).
        artifacts: the artifact store.
        kind: artifacts, memories or traces.
        now: the collection's logical time.
        after_id: the cursor (``None``: from the start).
        own_memory_id: ``artifact_id -> memory id`` of the memory derived from an artifact
            (``activities.ingest.memory_id_for``), so a file's own memory does not count as citing it.

    Returns:
        What the batch did, and the cursor for the next one.
    """
    table = _TABLES[kind]
    async with sessions() as session:
        query = _due(table, after_id, limit)
        rows = list((await session.scalars(query)).all())
        due = [(row.account_id, row.id, retention_action(
            kind, RetentionRule(kind=RetentionClass(row.retention), after_days=row.retention_days),
            RetentionState(row.retention_state), row.created_at, now)) for row in rows]
    handles: dict[str, str] = {}  # artifact id -> sha256 its handle names, for the generated files due for deletion
    if kind is RecordKind.ARTIFACT:
        files = {row.id for row in rows if row.content_type == FILE_CONTENT_TYPE
                 and row.retention_state == RetentionState.LIVE.value}
        for account_id, row_id, action in due:
            if action is RetentionAction.DELETE and row_id in files:
                async with sessions() as session:
                    sha256 = await _handle_sha256(session, artifacts, account_id, row_id)
                if sha256 is not None:
                    handles[row_id] = sha256
    quoted: set[str] = set()
    if handles:
        async with sessions() as session:  # one scan of the messages for the whole batch
            quoted = await files_cited_by_messages(session, [
                (account_id, row_id, handles[row_id]) for account_id, row_id, _ in due if row_id in handles])
    actions: Counter[str] = Counter()
    for account_id, row_id, action in due:
        if action is RetentionAction.NONE:
            continue
        if kind is RecordKind.ARTIFACT:
            applied = await _apply_artifact(sessions, artifacts, account_id, row_id, action, own_memory_id,
                                            handle_sha=handles.get(row_id), quoted=row_id in quoted)
        elif kind is RecordKind.MEMORY:
            applied = await _apply_memory(sessions, account_id, row_id, action)
        else:
            applied = await _apply_trace(sessions, account_id, row_id)
        actions[applied] += 1
    return RetentionBatch(last_id=rows[-1].id if rows else after_id, scanned=len(rows), done=len(rows) < limit,
                          actions=dict(actions))


async def _apply_artifact(sessions: Any, artifacts: ArtifactStore, account_id: str, artifact_id: str,
                          action: RetentionAction, own_memory_id: Any, *, handle_sha: str | None = None,
                          quoted: bool = False) -> str:
    """Apply one action to one artifact; ``handle_sha`` and ``quoted`` are the batch's findings for a due file."""
    async with sessions() as session:
        row = (await session.execute(select(
            ToolArtifact.storage, ToolArtifact.storage_key, ToolArtifact.sha256, ToolArtifact.content_type,
            ToolArtifact.retention_state, ToolArtifact.tool_call_id, ToolArtifact.tool_name, ToolArtifact.status,
        ).where(ToolArtifact.account_id == account_id, ToolArtifact.id == artifact_id))).first()
    if row is None:
        return "gone"  # deleted since the batch was read
    if row.content_type != FILE_CONTENT_TYPE or row.retention_state != RetentionState.LIVE.value:
        handle_sha = None
    if action is RetentionAction.DELETE and handle_sha is not None:
        memory_id = own_memory_id(artifact_id) if own_memory_id else None
        async with sessions() as session:
            if await file_handle_cited(session, account_id, artifact_id, handle_sha, memory_id, quoted=quoted):
                return "kept_cited"
    if action is RetentionAction.ARCHIVE:
        await _archive(sessions, artifacts, account_id, artifact_id, row)
        return action.value
    # A recall's result is a copy of bytes it served: it goes the way of its source, before the source
    # (whose deletion clears the recalls' pointer to it; a crash in between: the next run finds both again).
    for copy_id in await _served_copies(sessions, account_id, artifact_id, action):
        await _apply_artifact(sessions, artifacts, account_id, copy_id, action, own_memory_id)
    if action is RetentionAction.DELETE:
        async with sessions() as session, session.begin():
            await mark_missing_source(session, account_id, artifact_id)
    # Bytes first, row after: a crash between the two leaves a row the next run finishes.
    keys = [row.storage_key] if row.storage_key else []
    if action is RetentionAction.DELETE and handle_sha is not None:
        keys.append(object_key(account_id, handle_sha))
    await _release_objects(sessions, artifacts, account_id, artifact_id, row.tool_call_id, keys)
    async with sessions() as session, session.begin():
        if action is RetentionAction.HASH_ONLY:
            # Nothing of the content stays anywhere: the memories built from it lose their text too (first,
            # so the sha256 they keep is that of what they held).
            ids = (await session.scalars(select(ToolMemory.id).where(
                ToolMemory.account_id == account_id, ToolMemory.source_artifact_ids.contains([artifact_id])))).all()
            for memory_id in ids:
                await _blank_memory(session, account_id, memory_id, RetentionState.HASH_ONLY)
        # Every text the call owns (policy.retention.CALL_TEXT) goes in the same transaction as the row's end
        # state: its arguments and error text, and what the memories built from it took of them.
        await forget_call_text(session, account_id, row.tool_call_id, artifact_id, row.tool_name,
                               failed=row.status == "failed")
        # Recalls and decisions keep the artifact's id (audit: an id reveals nothing), not the pointers into it.
        await scrub_recall_pointers(session, account_id, artifact_id)
        if action is RetentionAction.DELETE:
            # A recall of it keeps what the model asked for and the decision, not a pointer to nothing.
            await session.execute(update(EvidenceRequest).where(
                EvidenceRequest.account_id == account_id, EvidenceRequest.artifact_id == artifact_id).values(
                artifact_id=None))
            await session.execute(delete(ToolArtifact).where(
                ToolArtifact.account_id == account_id, ToolArtifact.id == artifact_id))
        else:
            await session.execute(update(ToolArtifact).where(
                ToolArtifact.account_id == account_id, ToolArtifact.id == artifact_id).values(
                storage_key=None, inline_payload=None, arguments={},
                retention_state=_END_STATE[action].value,
                error=None if action is RetentionAction.HASH_ONLY else _removed_error(ToolArtifact.error)))
    return action.value


async def _served_copies(sessions: Any, account_id: str, artifact_id: str, action: RetentionAction) -> list[str]:
    """The results of the recalls that served bytes of an artifact (``recall`` captures what it served).

    Only those the action still changes: any row for ``delete``, live rows for ``redact`` and ``hash_only``.
    """
    recalls = select(EvidenceRequest.tool_call_id).where(
        EvidenceRequest.account_id == account_id, EvidenceRequest.artifact_id == artifact_id,
        EvidenceRequest.bytes_served > 0)
    query = select(ToolArtifact.id).where(ToolArtifact.account_id == account_id, ToolArtifact.id != artifact_id,
                                          ToolArtifact.tool_call_id.in_(recalls))
    if action is not RetentionAction.DELETE:
        query = query.where(ToolArtifact.retention_state == RetentionState.LIVE.value)
    async with sessions() as session:
        return list((await session.scalars(query.order_by(ToolArtifact.id))).all())


async def _release_objects(sessions: Any, artifacts: ArtifactStore, account_id: str, artifact_id: str,
                           tool_call_id: str, keys: list[str]) -> None:
    """Remove each object no other row still refers to, then the call's own stored-object rows for it.

    Under the key's lock, in one transaction: the object goes first, the rows after, so a crash
    in between leaves rows naming a missing object that the next run finishes.
    """
    for key in keys:
        async with sessions() as session, session.begin():
            await object_lock(session, key)
            needed = await object_still_needed(session, artifacts, account_id, key, except_artifact=artifact_id,
                                               except_tool_call=tool_call_id)
            if not needed:
                await artifacts.delete(account_id, key)
            await forget_call_objects(session, account_id, tool_call_id, key)


async def _archive(sessions: Any, artifacts: ArtifactStore, account_id: str, artifact_id: str, row: Any) -> None:
    """Copy the bytes under the archive prefix, release the live object, then mark the row."""
    target = archive_key(account_id, row.sha256)
    if not await artifacts.exists(account_id, target):
        if row.storage_key is not None and row.storage_key != target:
            data = await artifacts.get(account_id, row.storage_key, row.sha256)
        else:
            async with sessions() as session:
                data = bytes(await session.scalar(select(ToolArtifact.inline_payload).where(
                    ToolArtifact.account_id == account_id, ToolArtifact.id == artifact_id)) or b"")
        await artifacts.put_at(account_id, target, data, content_type=row.content_type)
    if row.storage_key is not None and row.storage_key != target:
        await _release_objects(sessions, artifacts, account_id, artifact_id, row.tool_call_id, [row.storage_key])
    async with sessions() as session, session.begin():
        await session.execute(update(ToolArtifact).where(
            ToolArtifact.account_id == account_id, ToolArtifact.id == artifact_id).values(
            storage="object", storage_key=target, inline_payload=None,
            retention_state=RetentionState.ARCHIVED.value))


def _removed_error(column: Any) -> Any:
    """``ERROR_REMOVED`` where the column holds an error, ``NULL`` where it holds none (in SQL)."""
    return case((column.is_(None), None), else_=literal(ERROR_REMOVED))


@translate_errors
async def forget_call_text(session: AsyncSession, account_id: str, tool_call_id: str, artifact_id: str,
                           tool_name: str, *, failed: bool) -> int:
    """Remove the text a call owns (:data:`policy.retention.CALL_TEXT`) once its result was removed.

    On the call's row: the arguments become the retention marker (with the sha256 of the original) and
    every error text (``last_error``, each attempt's) :data:`policy.retention.ERROR_REMOVED`
    (:func:`policy.retention.forgotten_call`); in the messages that wrote the call, the arguments become
    the marker; the memories built from the result lose the arguments from their title, summary and
    subject, and a failed call's memory its error text (:func:`policy.retention.forgotten_memory`). The
    name, call id, status and attempt count stay. Idempotent.

    Returns:
        How many rows were changed.
    """
    call = (await session.execute(select(ToolCall.call_id, ToolCall.arguments, ToolCall.last_error,
                                         ToolCall.history).where(
        ToolCall.account_id == account_id, ToolCall.id == tool_call_id))).first()
    changed = 0
    if call is not None:
        arguments, last_error, history = forgotten_call(call.arguments or {}, call.last_error, call.history or [])
        if (arguments, last_error, history) != (call.arguments, call.last_error, call.history):
            await session.execute(update(ToolCall).where(
                ToolCall.account_id == account_id, ToolCall.id == tool_call_id).values(
                arguments=arguments, last_error=last_error, history=history))
            changed += 1
        written = (await session.execute(select(Message.id, Message.tool_calls).where(
            Message.account_id == account_id, Message.tool_calls.contains([{"call_id": call.call_id}])))).all()
        for message_id, calls in written:
            rewritten = [{**entry, "arguments": redacted_arguments(entry.get("arguments") or {})}
                         if isinstance(entry, dict) and entry.get("call_id") == call.call_id else entry
                         for entry in calls]
            if rewritten != calls:
                await session.execute(update(Message).where(
                    Message.account_id == account_id, Message.id == message_id).values(tool_calls=rewritten))
                changed += 1
    memories = (await session.execute(select(
        ToolMemory.id, ToolMemory.title, ToolMemory.summary, ToolMemory.payload, ToolMemory.subject_key).where(
        ToolMemory.account_id == account_id, ToolMemory.source_artifact_ids.contains([artifact_id])))).all()
    for memory in memories:
        forgotten = forgotten_memory(tool_name, memory.title, memory.summary, memory.payload or {},
                                     memory.subject_key, failed=failed)
        if (forgotten.title, forgotten.summary, forgotten.payload, forgotten.subject_key) != (
                memory.title, memory.summary, memory.payload, memory.subject_key):
            await session.execute(update(ToolMemory).where(
                ToolMemory.account_id == account_id, ToolMemory.id == memory.id).values(
                title=forgotten.title, summary=forgotten.summary, payload=forgotten.payload,
                subject_key=forgotten.subject_key))
            changed += 1
    return changed


@translate_errors
async def scrub_recall_pointers(session: AsyncSession, account_id: str, artifact_id: str) -> int:
    """Take the JSON pointers into an artifact out of its recalls and the decisions about it.

    A pointer names keys of the raw result (``/patients/Jane Roe``): once retention removed the result, its
    recalls (``evidence_requests``: locator and decision) and the policy decisions about the artifact keep
    the ids and what was decided, with :data:`policy.retention.POINTER_REMOVED` for the pointer
    (:func:`policy.retention.scrubbed_reason`). Run before a deleted artifact's id is cleared from its recalls.
    Idempotent.
    """
    recalls = (await session.execute(select(EvidenceRequest.id, EvidenceRequest.locator, EvidenceRequest.decision)
                                     .where(EvidenceRequest.account_id == account_id,
                                            EvidenceRequest.artifact_id == artifact_id))).all()
    pointers = {locator["pointer"] for _, locator, _ in recalls
                if isinstance(locator, dict) and locator.get("kind") == "json_pointer"
                and isinstance(locator.get("pointer"), str) and locator["pointer"] != POINTER_REMOVED}
    if not pointers:
        return 0
    changed = 0
    for recall_id, locator, decision in recalls:
        values: dict[str, Any] = {}
        if isinstance(locator, dict) and locator.get("pointer") in pointers:
            values["locator"] = {**locator, "pointer": POINTER_REMOVED}
        reason = (decision or {}).get("reason")
        if isinstance(reason, str) and scrubbed_reason(reason, pointers) != reason:
            values["decision"] = {**decision, "reason": scrubbed_reason(reason, pointers)}
        if values:
            await session.execute(update(EvidenceRequest).where(
                EvidenceRequest.account_id == account_id, EvidenceRequest.id == recall_id).values(**values))
            changed += 1
    decided = (await session.execute(select(
        PolicyDecision.context_assembly_id, PolicyDecision.ordinal, PolicyDecision.reason).where(
        PolicyDecision.account_id == account_id, PolicyDecision.subject_ref == f"artifact:{artifact_id}"))).all()
    for assembly_id, ordinal, reason in decided:
        scrubbed = scrubbed_reason(reason, pointers)
        if scrubbed != reason:
            await session.execute(update(PolicyDecision).where(
                PolicyDecision.account_id == account_id, PolicyDecision.context_assembly_id == assembly_id,
                PolicyDecision.ordinal == ordinal).values(reason=scrubbed))
            changed += 1
    return changed


@translate_errors
async def mark_missing_source(session: AsyncSession, account_id: str, artifact_id: str) -> int:
    """Mark every memory citing an artifact ``missing_source`` (before the artifact is deleted).
    """
    result = await session.execute(update(ToolMemory).where(
        ToolMemory.account_id == account_id, ToolMemory.source_artifact_ids.contains([artifact_id]),
        ToolMemory.resolution != ResolutionStatus.MISSING_SOURCE.value,
    ).values(resolution=ResolutionStatus.MISSING_SOURCE.value, repair_attempts=ToolMemory.repair_attempts + 1))
    return result.rowcount or 0


async def _blank_memory(session: AsyncSession, account_id: str, memory_id: str, state: RetentionState) -> None:
    """Replace a memory's content with the marker, keeping its provenance and links."""
    memory = await session.scalar(select(ToolMemory).where(
        ToolMemory.account_id == account_id, ToolMemory.id == memory_id))
    if memory is None or memory.retention_state in (RetentionState.REDACTED.value, RetentionState.HASH_ONLY.value):
        return
    content = canonical_json({"title": memory.title, "summary": memory.summary, "payload": memory.payload,
                              "rationale": memory.rationale, "limitations": memory.limitations})
    payload: dict[str, Any] = {}
    if state is RetentionState.HASH_ONLY:
        payload = {"removed_sha256": hashlib.sha256(content.encode()).hexdigest()}
    await session.execute(update(ToolMemory).where(ToolMemory.account_id == account_id, ToolMemory.id == memory_id)
                          .values(title=REDACTED_MARKER, summary=REDACTED_MARKER, payload=payload, rationale="",
                                  limitations="", retention_state=state.value))


@translate_errors
async def unlink_memory(session: AsyncSession, account_id: str, memory_id: str) -> int:
    """Remove a memory's id from the other memories' links (before the memory is deleted, same transaction).

    ``conflicts_with``, ``supersedes`` and ``promoted_from`` drop it (a memory's privacy class was
    derived from its sources when it was written and stays on its row). A memory it had superseded
    names its newest other replacement instead (one whose ``supersedes`` lists it), or none: a replacement
    nobody can see any more replaces nothing, as :mod:`policy.admission` already treats an invisible one.
    """
    changed = 0
    for column in (ToolMemory.conflicts_with, ToolMemory.supersedes, ToolMemory.promoted_from):
        result = await session.execute(update(ToolMemory).where(
            ToolMemory.account_id == account_id, column.contains([memory_id])).values(
            {column.key: func.array_remove(column, memory_id)}))
        changed += result.rowcount or 0
    replaced = (await session.scalars(select(ToolMemory.id).where(
        ToolMemory.account_id == account_id, ToolMemory.superseded_by == memory_id))).all()
    for old_id in replaced:
        successor = (await session.execute(select(ToolMemory.id, ToolMemory.seq).where(
            ToolMemory.account_id == account_id, ToolMemory.id != memory_id, ToolMemory.supersedes.contains([old_id]),
        ).order_by(ToolMemory.seq.desc(), ToolMemory.id.desc()).limit(1))).first()
        await session.execute(update(ToolMemory).where(ToolMemory.account_id == account_id, ToolMemory.id == old_id)
                              .values(superseded_by=successor.id if successor else None,
                                      superseded_seq=successor.seq if successor else None))
        changed += 1
    return changed


async def _apply_memory(sessions: Any, account_id: str, memory_id: str, action: RetentionAction) -> str:
    async with sessions() as session, session.begin():
        if action is RetentionAction.DELETE:
            await unlink_memory(session, account_id, memory_id)
            await session.execute(delete(ToolMemory).where(
                ToolMemory.account_id == account_id, ToolMemory.id == memory_id))
        else:
            await _blank_memory(session, account_id, memory_id, _END_STATE[action])
    return action.value


@translate_errors
async def trace_dropped(session: AsyncSession, account_id: str, assembly_id: str) -> bool:
    """Whether retention dropped an assembly's stored messages (it can no longer be replayed byte for byte)."""
    state = await session.scalar(select(ContextAssembly.retention_state).where(
        ContextAssembly.account_id == account_id, ContextAssembly.id == assembly_id))
    return state is not None and state != RetentionState.LIVE.value


async def _apply_trace(sessions: Any, account_id: str, assembly_id: str) -> str:
    """Drop an assembly's stored messages; its decisions, counts and content hash stay."""
    async with sessions() as session, session.begin():
        await session.execute(update(ContextAssembly).where(
            ContextAssembly.account_id == account_id, ContextAssembly.id == assembly_id).values(
            messages=literal([], type_=ContextAssembly.messages.type),
            retention_state=RetentionState.REDACTED.value))
    return RetentionAction.DROP_TRACE.value


__all__ = [
    "ARCHIVE_SEGMENT",
    "RetentionBatch",
    "archive_key",
    "collect_batch",
    "file_handle_cited",
    "files_cited_by_messages",
    "mark_missing_source",
    "object_still_needed",
    "participant_retention",
    "forget_call_text",
    "scrub_recall_pointers",
    "trace_dropped",
    "unlink_memory",
]
