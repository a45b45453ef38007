"""Ingest: the one path by which a tool call and its result enter Dossier.

For live agent turns, answered deferred calls, subagent reports and imported
trajectories alike:

1. :func:`begin_tool_call` records the call as the model made it (idempotent
   on the provider's call id), with visibility from the runtime mode and
   privacy from the tool spec, raised by the store to the strictest class the
   calling model was shown (taint: the arguments may copy any of it);
2. the tool runs, or waits (:func:`defer_tool_call`), or fails an attempt
   (:func:`record_attempt_failure`);
3. :func:`ingest_tool_result` stores the raw bytes exactly as returned (inline
   or in S3 by size, hashed, replay tokens counted; an S3 payload's write is
   recorded in ``stored_objects`` before its put), settles the call's
   status, claims the objects the tool wrote that a succeeded result refers
   to (:attr:`activities.tools.base.ToolResult.objects`: a file handle's
   bytes), derives the compact memory from the bytes it holds, links it to
   the live memories it supersedes or contradicts, and stores it: one
   transaction, once per tool call. A repeated ingest of the same call
   returns what the first one wrote and writes nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy.ext.asyncio import AsyncSession

from activities.deps import EXACT_TOKEN_COUNT_MAX_BYTES, GraphDeps
from activities.errors import ToolOutcomeError
from policy.derive import derive_memory, memory_record
from policy.payloads import decode_payload
from policy.enums import PrivacyClass, PromotionPolicy, ToolCallStatus, VisibilityScope, at_least
from policy.links import links_for
from policy.records import ArtifactRecord, ToolCallRecord, ToolMemoryRecord
from policy.retention import RecordKind, RetentionSpec, effective_rule
from policy.tools import default_visibility
from store import objects as stored_objects
from store import retention as retention_store
from store import tool_memories
from store import tools as tool_store
from store.artifacts import ObjectRef
from store.branches import get_branch, load_lineage
from store.errors import NotFoundError
from store.payloads import capture_artifact, read_artifact_payload
from store.writes import NewToolCall

_MEMORY_NAMESPACE = uuid.UUID("5b0f3c1e-6f55-4d8e-9a61-0d0551e4d001")

CALL_ERROR_MAX_CHARS = 16_000
"""A failed call keeps at most this much error text on its row (head and
tail); the artifact keeps all of it."""


def memory_id_for(artifact_id: str) -> str:
    """The id of the memory derived from ``artifact_id`` (stable across retries)."""
    return str(uuid.uuid5(_MEMORY_NAMESPACE, f"tool-memory:{artifact_id}"))


class ToolOutcome(BaseModel):
    """How one tool execution ended, with its raw output."""

    model_config = ConfigDict(frozen=True)
    status: ToolCallStatus
    """``succeeded`` or ``failed``."""
    result: bytes
    """The raw result, or the error text of a failed call, untruncated."""
    content_type: str = "application/octet-stream"
    attempts: int = 1


@dataclass(frozen=True)
class Ingested:
    """What :func:`ingest_tool_result` stored for one tool call."""

    artifact: ArtifactRecord
    """The raw result's metadata (the bytes are inline or in S3)."""
    memory: ToolMemoryRecord
    """The compact memory derived from it, with its links."""


async def begin_tool_call(
    deps: GraphDeps, account_id: str, conversation_id: str, call: NewToolCall
) -> ToolCallRecord:
    """Record a tool call the model made, before it runs; a repeated ``call_id`` returns the stored call.

    What the call leaves ``None`` comes from the tool's spec and the runtime mode. A given ``privacy``
    tightens a known tool's class, never loosens it, and declares an unknown tool's, which otherwise
    fails closed to the strictest class; the store raises it further to what the calling run was shown.
    """
    spec = deps.catalog.spec(call.name)
    declared = any(tool.name == call.name for tool in deps.catalog.tools)
    if call.privacy is None:
        privacy = spec.privacy  # an unknown tool's is the strictest class: fail closed
    elif declared:
        privacy = at_least(call.privacy, spec.privacy)  # an override may tighten a known tool's class, never loosen it
    else:
        privacy = call.privacy
    retry_critical = spec.retry_critical if call.retry_critical is None else call.retry_critical
    call = replace(call, arguments=dict(call.arguments), privacy=privacy, retry_critical=retry_critical,
                   visibility=call.visibility or default_visibility(call.runtime_kind))
    async with deps.sessions() as session, session.begin():
        return await tool_store.record_tool_call(session, account_id, conversation_id, call)


async def defer_tool_call(
    deps: GraphDeps, account_id: str, tool_call_id: str, waiting_for: str, at: datetime | None = None
) -> ToolCallRecord:
    """Mark a call as waiting on something outside the agent (a user, a webhook)."""
    async with deps.sessions() as session, session.begin():
        return await tool_store.update_tool_call(
            session, account_id, tool_call_id, status=ToolCallStatus.DEFERRED, waiting_for=waiting_for, at=at
        )


async def record_attempt_failure(
    deps: GraphDeps,
    account_id: str,
    tool_call_id: str,
    *,
    attempt: int,
    error: str,
    final: bool,
    at: datetime | None = None,
) -> ToolCallRecord:
    """Append a failed attempt to the call's history.

    A non-final failure leaves the call ``retrying``; the final one makes it
    ``failed`` and keeps the error as the call's ``last_error``, the text the
    policy preserves verbatim for retry-critical calls.
    """
    status = ToolCallStatus.FAILED if final else ToolCallStatus.RETRYING
    async with deps.sessions() as session, session.begin():
        return await tool_store.update_tool_call(
            session, account_id, tool_call_id, status=status, attempt=attempt, error=call_error_text(error), at=at
        )


def object_recorder(
    deps: GraphDeps, account_id: str, tool_call_id: str
) -> Callable[[ObjectRef, PrivacyClass], Awaitable[None]]:
    """What a tool calls to record an object before it puts it (:attr:`ToolContext.record_object`).

    Each record commits on its own, before the put: a put whose attempt then fails is
    still known to the graph (a ``pending`` row the retention sweep removes).

    Args:
        tool_call_id: the call (row id) whose attempt writes.

    Returns:
        ``record(ref, privacy)``.
    """

    async def record(ref: ObjectRef, privacy: PrivacyClass) -> None:
        async with deps.sessions() as session, session.begin():
            await stored_objects.record_object(session, account_id, tool_call_id, ref, privacy)

    return record


async def _record_payload_object(deps: GraphDeps, account_id: str, tool_call_id: str, outcome: ToolOutcome) -> None:
    """Record the S3 object a payload too large to stay inline is about to be put as (before the capture)."""
    if len(outcome.result) <= deps.inline_max_bytes:
        return
    ref = deps.artifacts.ref_for(account_id, outcome.result, content_type=outcome.content_type)
    async with deps.sessions() as session, session.begin():
        await stored_objects.record_object(session, account_id, tool_call_id, ref)


def call_error_text(text: str) -> str:
    """The error text a failed call keeps: all of it, or its head and tail."""
    if len(text) <= CALL_ERROR_MAX_CHARS:
        return text
    head, tail = text[: CALL_ERROR_MAX_CHARS // 4], text[-(CALL_ERROR_MAX_CHARS * 3 // 4) :]
    cut = len(text) - len(head) - len(tail)
    return f"{head}\n[{cut} chars omitted here; the artifact holds the full error]\n{tail}"


def replay_tokens(deps: GraphDeps, raw: bytes) -> tuple[int, bool]:
    """Tokens the raw result costs in transcript replay, and whether it is exact."""
    if len(raw) > EXACT_TOKEN_COUNT_MAX_BYTES:
        return len(raw) // 4, False
    return deps.counter(decode_payload(raw)), True


async def ingest_tool_result(
    deps: GraphDeps,
    account_id: str,
    tool_call_id: str,
    outcome: ToolOutcome,
    **capture: Any,
) -> Ingested:
    """Capture a tool's raw result, settle the call, and derive and link its memory, once.

    Args:
        tool_call_id: the call (row id) whose result this is.
        outcome: status and raw bytes, untruncated.
        **capture: the keyword arguments of :func:`capture_tool_result` (capture time,
            promotion, provider, model, active skills, tool version, runtime metadata,
            retry-critical flag).

    Returns:
        The artifact and its memory. A repeated ingest of the same call returns
        the first artifact and memory and changes nothing.

    Raises:
        ToolOutcomeError: the outcome's status is not a final one.
        NotFoundError: unknown tool call.
        PayloadTooLargeError: the payload exceeds the artifact store's limit.
    """
    _check_final(outcome)
    # Counted before the transaction opens: a large payload takes a while, and needs no connection.
    tokens = replay_tokens(deps, outcome.result)
    await _record_payload_object(deps, account_id, tool_call_id, outcome)
    async with deps.sessions() as session, session.begin():
        captured = await _capture(deps, session, account_id, tool_call_id, outcome, tokens, **capture)
        if captured.call is None:
            return Ingested(captured.artifact, await _stored_memory(deps, session, account_id, captured.artifact))
        memory = await _derive(deps, session, account_id, captured.artifact, arguments=dict(captured.call.arguments),
                               raw=outcome.result, agent_retention=captured.agent_retention)
        return Ingested(captured.artifact, memory)


async def ingested_result(deps: GraphDeps, account_id: str, tool_call_id: str) -> Ingested | None:
    """What an earlier ingest stored for a tool call, or ``None`` when its result is not captured yet.

    Raises:
        NotFoundError: unknown tool call.
    """
    async with deps.sessions() as session, session.begin():
        try:
            artifact = await tool_store.get_artifact_for_tool_call(session, account_id, tool_call_id)
        except NotFoundError:
            await tool_store.get_tool_call(session, account_id, tool_call_id)  # an unknown call is an error
            return None
        return Ingested(artifact, await _stored_memory(deps, session, account_id, artifact))


async def capture_tool_result(
    deps: GraphDeps,
    account_id: str,
    tool_call_id: str,
    outcome: ToolOutcome,
    **capture: Any,
) -> ArtifactRecord:
    """Capture a raw result and settle the call without deriving a memory of it.

    For results whose model-facing memory is built elsewhere: a subagent's
    report is captured for provenance, and :mod:`activities.promotion` writes
    the parent's memory of it. Every other result goes through
    :func:`ingest_tool_result`.

    Args:
        tool_call_id: the call (row id) whose result this is.
        outcome: status and raw bytes, untruncated.
        **capture: as for :func:`ingest_tool_result`.

    Returns:
        The artifact (the first one, on a repeated capture).
    """
    _check_final(outcome)
    tokens = replay_tokens(deps, outcome.result)
    await _record_payload_object(deps, account_id, tool_call_id, outcome)
    async with deps.sessions() as session, session.begin():
        return (await _capture(deps, session, account_id, tool_call_id, outcome, tokens, **capture)).artifact


@dataclass(frozen=True)
class _Captured:
    """What :func:`_capture` did."""

    artifact: ArtifactRecord
    call: ToolCallRecord | None
    """The settled call; ``None`` when it was captured before (nothing was written then)."""
    agent_retention: RetentionSpec | None = None
    """The calling participant's retention override, read once for the artifact and its memory."""


def _check_final(outcome: ToolOutcome) -> None:
    if outcome.status not in (ToolCallStatus.SUCCEEDED, ToolCallStatus.FAILED):
        raise ToolOutcomeError(f"cannot capture a {outcome.status.value} outcome; only succeeded or failed")


async def _capture(
    deps: GraphDeps,
    session: AsyncSession,
    account_id: str,
    tool_call_id: str,
    outcome: ToolOutcome,
    tokens: tuple[int, bool],
    *,
    captured_at: datetime | None = None,
    promotion: PromotionPolicy = PromotionPolicy.NONE,
    provider: str | None = None,
    model: str | None = None,
    active_skills: Sequence[str] = (),
    tool_version: str | None = None,
    runtime_meta: Mapping[str, Any] | None = None,
    retry_critical: bool | None = None,
    privacy: PrivacyClass | None = None,
    visibility: VisibilityScope | None = None,
    objects: Sequence[ObjectRef] = (),
) -> _Captured:
    """Store the raw bytes and settle the call, in the caller's transaction.

    Args:
        session: the caller's session (inside its transaction).
        tool_call_id: the call (row id) whose result this is.
        outcome: status and raw bytes, untruncated.
        tokens: the result's replay tokens and whether the count is exact (:func:`replay_tokens`).
        captured_at: capture time (the workflow's time in live runs).
        promotion: ``on_completion`` for a subagent child's results.
        provider: provider of the calling model.
        active_skills: skills active when the tool ran.
        tool_version: version of the tool implementation.
        retry_critical: mark the call retry-critical (a failure the model must
            see verbatim until it is resolved); ``None`` keeps the call's flag.
        privacy: the result's own class when stricter than the call's.
        visibility: overrides the artifact's visibility.
        objects: objects the tool put that a succeeded result refers to: claimed here, in the
            artifact's transaction (a failed result claims nothing; the sweep removes them).

    Returns:
        The artifact, the settled call (``None`` when the call was captured before;
        nothing is written then) and the participant's retention override.
    """
    try:
        return _Captured(await tool_store.get_artifact_for_tool_call(session, account_id, tool_call_id), None)
    except NotFoundError:
        pass
    result_tokens, exact = tokens
    call = await tool_store.get_tool_call(session, account_id, tool_call_id)
    spec = deps.catalog.spec(call.name)
    # Read once per capture: the artifact's insert and its memory's both write the rule they are kept under.
    agent = await retention_store.participant_retention(session, account_id, call.participant_id)
    error = call_error_text(decode_payload(outcome.result)) if outcome.status is ToolCallStatus.FAILED else None
    artifact = await capture_artifact(
        session,
        deps.artifacts,
        account_id,
        tool_call_id,
        outcome.result,
        content_type=outcome.content_type,
        inline_max=deps.inline_max_bytes,
        result_tokens=result_tokens,
        status=outcome.status,
        error=error,
        promotion=promotion,
        provider=provider,
        model=model,
        active_skills=list(active_skills),
        tool_profile=spec.name,
        tool_version=tool_version or spec.version,
        runtime_meta={**(runtime_meta or {}), "result_tokens_exact": exact},
        captured_at=captured_at,
        privacy=privacy,
        visibility=visibility,
        retention=effective_rule(RecordKind.ARTIFACT, spec.retention, agent),
    )
    if outcome.status is ToolCallStatus.SUCCEEDED and objects:
        await stored_objects.claim_objects(session, account_id, tool_call_id, objects)
    await tool_store.update_tool_call(
        session,
        account_id,
        tool_call_id,
        status=outcome.status,
        attempt=outcome.attempts,
        error=error,
        retry_critical=retry_critical,
        at=captured_at,
    )
    return _Captured(artifact, call, agent)


async def _derive(
    deps: GraphDeps,
    session: AsyncSession,
    account_id: str,
    artifact: ArtifactRecord,
    *,
    arguments: dict[str, Any],
    raw: bytes,
    agent_retention: RetentionSpec | None,
) -> ToolMemoryRecord:
    """Derive, link and store the memory of ``artifact`` from the bytes just captured.

    ``agent_retention`` is the calling participant's override (read by the caller, once per ingest).
    """
    conversation_id = (await get_branch(session, account_id, artifact.branch_id)).conversation_id
    spec = deps.catalog.spec(artifact.tool_name)
    draft = derive_memory(spec, artifact.id, arguments, artifact.status, raw, content_type=artifact.content_type,
                          observed_at=artifact.captured_at)
    related, statuses = await tool_memories.related_memories(
        session, account_id, conversation_id, draft.subject_key, tuple(draft.payload.get("facts", {})),
        tool_name=artifact.tool_name, resources=draft.resources)
    lineage = await load_lineage(session, account_id, artifact.branch_id)
    supersedes, conflicts = links_for(draft, artifact, lineage, related, statuses)
    memory = memory_record(draft, artifact, memory_id=memory_id_for(artifact.id), supersedes=supersedes,
                           conflicts_with=conflicts)
    return await tool_memories.insert_tool_memory(
        session, account_id, conversation_id, memory,
        retention=effective_rule(RecordKind.MEMORY, spec.retention, agent_retention))


async def _stored_memory(
    deps: GraphDeps, session: AsyncSession, account_id: str, artifact: ArtifactRecord
) -> ToolMemoryRecord:
    """The memory of an artifact captured earlier.

    Ingest writes both in one transaction, so the memory is there; an artifact
    captured without one (by a version that derived in a second step, which a
    crash could interrupt) gets it derived now from its verified stored bytes.
    """
    try:
        return await tool_memories.get_tool_memory(session, account_id, memory_id_for(artifact.id))
    except NotFoundError:
        pass
    call = await tool_store.get_tool_call(session, account_id, artifact.tool_call_id)
    raw = await read_artifact_payload(session, deps.artifacts, account_id, artifact.id)
    agent = await retention_store.participant_retention(session, account_id, artifact.owner_participant_id)
    return await _derive(deps, session, account_id, artifact, arguments=dict(call.arguments), raw=raw,
                         agent_retention=agent)


__all__ = [
    "CALL_ERROR_MAX_CHARS",
    "Ingested",
    "ToolOutcome",
    "begin_tool_call",
    "call_error_text",
    "capture_tool_result",
    "defer_tool_call",
    "ingest_tool_result",
    "ingested_result",
    "memory_id_for",
    "object_recorder",
    "record_attempt_failure",
    "replay_tokens",
]
