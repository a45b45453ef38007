"""Recording tool calls and capturing their raw results, before anything is cut.

This is the one path by which a tool result enters Dossier, for live agent
turns and for imported trajectories alike:

1. :func:`begin_tool_call` records the call as the model made it (idempotent
   on the provider's call id), with visibility from the runtime mode and
   privacy from the tool spec;
2. the tool runs (or waits: :func:`defer_tool_call`; or fails an attempt:
   :func:`record_attempt_failure`);
3. :func:`capture_tool_result` stores the raw bytes exactly as returned,
   inline or in S3 by size, hashes them, counts their replay tokens and
   moves the call to its final status, once per tool call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from activities.deps import EXACT_TOKEN_COUNT_MAX_BYTES, GraphDeps
from activities.errors import ToolOutcomeError
from policy.enums import PrivacyClass, PromotionPolicy, RuntimeKind, ToolCallStatus, VisibilityScope
from policy.records import ArtifactRecord, ToolCallRecord
from policy.derive import decode_payload
from policy.tools import default_visibility
from store import tools as tool_store
from store.errors import NotFoundError
from store.payloads import capture_artifact


class ToolOutcome(BaseModel):
    """How one tool execution ended, with its raw output."""

    model_config = ConfigDict(frozen=True)
    status: ToolCallStatus
    """``succeeded`` or ``failed``."""
    result: bytes
    """The raw result, or the error text of a failed call, untruncated."""
    content_type: str = "application/octet-stream"
    attempts: int = 1


async def begin_tool_call(
    deps: GraphDeps,
    account_id: str,
    conversation_id: str,
    branch_id: str,
    participant_id: str,
    *,
    call_id: str,
    name: str,
    arguments: Mapping[str, Any],
    runtime_kind: RuntimeKind,
    model_run_id: str | None = None,
    at: datetime | None = None,
    visibility: VisibilityScope | None = None,
    privacy: PrivacyClass | None = None,
    shared_with: Sequence[str] = (),
    retry_critical: bool | None = None,
) -> ToolCallRecord:
    """Record a tool call the model made, before it runs.

    Args:
        deps: graph dependencies.
        account_id: the owning account.
        conversation_id: the conversation.
        branch_id: the branch the call was made on.
        participant_id: the participant whose model made the call.
        call_id: the provider's tool-call id (the idempotency key).
        name: the tool.
        arguments: the arguments as the model wrote them.
        runtime_kind: the runtime mode (decides default visibility).
        model_run_id: the model run that made the call.
        at: when the call was made.
        visibility: overrides the runtime mode's default visibility.
        privacy: overrides the tool spec's privacy class.
        shared_with: participants that may see the call's state.
        retry_critical: overrides the tool spec's retry-critical flag.

    Returns:
        The recorded call (the existing one if ``call_id`` was seen before).
    """
    spec = deps.catalog.spec(name)
    async with deps.sessions() as session, session.begin():
        return await tool_store.record_tool_call(
            session,
            account_id,
            conversation_id,
            branch_id,
            participant_id,
            call_id=call_id,
            name=name,
            arguments=dict(arguments),
            model_run_id=model_run_id,
            retry_critical=spec.retry_critical if retry_critical is None else retry_critical,
            visibility=visibility or default_visibility(runtime_kind),
            shared_with=shared_with,
            privacy=privacy or spec.privacy,
            runtime_kind=runtime_kind,
            at=at,
        )


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


CALL_ERROR_MAX_CHARS = 16_000
"""A failed call keeps at most this much error text on its row (head and
tail); the artifact keeps all of it."""


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


async def capture_tool_result(
    deps: GraphDeps,
    account_id: str,
    tool_call_id: str,
    outcome: ToolOutcome,
    *,
    captured_at: datetime | None = None,
    promotion: PromotionPolicy = PromotionPolicy.NONE,
    provider: str | None = None,
    model: str | None = None,
    active_skills: Sequence[str] = (),
    tool_version: str | None = None,
    runtime_meta: Mapping[str, Any] | None = None,
    retry_critical: bool | None = None,
) -> ArtifactRecord:
    """Capture a tool's raw result once, and settle the call's status.

    Args:
        deps: graph dependencies.
        account_id: the owning account.
        tool_call_id: the call (row id) whose result this is.
        outcome: status and raw bytes, untruncated.
        captured_at: capture time (the workflow's time in live runs).
        promotion: ``on_completion`` for a subagent child's results.
        provider: provider of the calling model.
        model: the calling model.
        active_skills: skills active when the tool ran.
        tool_version: version of the tool implementation.
        runtime_meta: free-form runtime details.
        retry_critical: mark the call retry-critical (a failure the model must
            see verbatim until it is resolved); ``None`` keeps the call's flag.

    Returns:
        The artifact. A repeated capture of the same call returns the first
        artifact and changes nothing.

    Raises:
        ToolOutcomeError: the outcome's status is not a final one.
        NotFoundError: unknown tool call.
        PayloadTooLargeError: the payload exceeds the artifact store's limit.
    """
    if outcome.status not in (ToolCallStatus.SUCCEEDED, ToolCallStatus.FAILED):
        raise ToolOutcomeError(f"cannot capture a {outcome.status.value} outcome; only succeeded or failed")
    tokens, exact = replay_tokens(deps, outcome.result)
    meta = {**(runtime_meta or {}), "result_tokens_exact": exact}
    async with deps.sessions() as session, session.begin():
        try:
            return await tool_store.get_artifact_for_tool_call(session, account_id, tool_call_id)
        except NotFoundError:
            pass
        call = await tool_store.get_tool_call(session, account_id, tool_call_id)
        spec = deps.catalog.spec(call.name)
        error = call_error_text(decode_payload(outcome.result)) if outcome.status is ToolCallStatus.FAILED else None
        artifact = await capture_artifact(
            session,
            deps.artifacts,
            account_id,
            tool_call_id,
            outcome.result,
            content_type=outcome.content_type,
            inline_max=deps.inline_max_bytes,
            result_tokens=tokens,
            status=outcome.status,
            error=error,
            promotion=promotion,
            provider=provider,
            model=model,
            active_skills=list(active_skills),
            tool_profile=spec.name,
            tool_version=tool_version or spec.version,
            runtime_meta=meta,
            captured_at=captured_at,
        )
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
        return artifact
