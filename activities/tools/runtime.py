"""Built-in runtime tools: ``recall`` (exact evidence behind an id) and ``remember`` (a user memory, if confirmed).

``recall`` lets a model ask for the raw bytes behind a memory or artifact id
it was shown (``m:3f2a91c0``, ``a:...`` or a full id), whole or through a
locator (CSV data rows, text lines, an RFC 6901 JSON pointer), or for a transcript
message the summary of earlier messages lists (``msg:3f2a91c0``, whole or lines). The pure gates of
:mod:`policy.recall` decide, over the same candidate set and route the
participant's contexts are assembled from; the request and its PolicyDecision
are stored (``store.evidence``) and the answer is the call's result, captured
like any tool result and read by the model as a native tool message. A denial
is an answer too (JSON ``{"recall": "denied", ...}``); a malformed locator or
one that does not fit the payload is a :class:`ToolArgumentError`.

The served bytes keep the source's protection: the result carries the source
artifact's privacy class (never looser than the call's) and, when the source
was private to the viewer, is private to it too (:attr:`ToolResult.privacy`,
:attr:`ToolResult.private`).

``remember`` is deferred: the model proposes a fact about the user and the
call waits for the user. Only a confirmation (``DossierClient.answer_memory`` or
``dossier answer ID '{"confirmed": true}'``) writes a user memory; a rejection
writes nothing. A tool result that tells the model to "remember" something can
therefore at most make it *propose* a memory.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from activities.deps import GraphDeps
from activities.tools.base import RegisteredTool, ToolArgumentError, ToolContext, ToolError, ToolResult
from policy.admission import resolve_viewer
from policy.enums import FreshnessClass, PrivacyClass, VisibilityScope
from policy.errors import DerivationError
from policy.records import ArtifactRecord, CandidateSet, GenerationBoundary, MessageRecord, ToolCallRecord
from policy.recall import (
    RecallDecision,
    RecallLocatorError,
    bad_locator,
    plan_recall,
    refuse_locator,
    settle_recall,
    unavailable_evidence,
)
from policy.rehydration import slice_payload
from policy.selection import Ledger
from policy.tools import ToolSpec
from store import conversations, evidence
from store import tools as tool_store
from store.branches import get_branch
from store.candidates import CandidateLimits, load_candidates
from store.errors import ArtifactIntegrityError, ArtifactNotFoundError
from store.payloads import read_artifact_payload

RECALL = "recall"
"""The recall tool's name."""
REMEMBER = "remember"
"""The remember tool's name."""

_SLICE_TYPES = {"rows": "text/csv; charset=utf-8", "lines": "text/plain; charset=utf-8",
                "json_pointer": "application/json"}


async def _recall(context: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    """Serve (or deny) the evidence one recall asks for, and store the request with its decision."""
    deps = context.graph
    if deps is None:  # a wiring bug, not a bad call: no attempt can fix it
        raise ToolError("recall needs the runtime graph; none was given to this tool context")
    ref, locator = arguments["id"], arguments.get("locator")
    account = context.account_id
    async with deps.sessions() as session:
        call = await tool_store.get_tool_call(session, account, context.tool_call_id)
        candidates, viewer_boundary = await _viewer_inputs(session, deps.limits, account, call, ref)
        spent = await evidence.served_bytes(session, account, call.model_run_id, excluding_tool_call_id=call.id)
    viewer = resolve_viewer(deps.policy, viewer_boundary, candidates, Ledger(deps.policy.version_tag))
    try:
        decision = plan_recall(deps.policy, viewer, candidates, ref, locator, spent)
    except RecallLocatorError as error:
        await _store(deps, account, call, ref, bad_locator(deps.policy, ref, str(error)))
        raise ToolArgumentError(f"recall: {error}") from error
    if not decision.allowed:
        await _store(deps, account, call, ref, decision)
        return _denial(ref, decision)
    if decision.message_id is not None:
        return await _serve_message(deps, account, call, ref, candidates, decision)
    artifact = next(a for a in candidates.artifacts if a.id == decision.artifact_id)
    decision, text = await _serve(deps, account, artifact, decision)
    if text is None:
        await _store(deps, account, call, ref, decision)
        if decision.decision.omission is None:  # the locator does not fit the payload: the model's bad input
            raise ToolArgumentError(f"recall: {decision.answer}")
        return _denial(ref, decision)
    payload = text.encode("utf-8")
    await _store(deps, account, call, ref, decision, len(payload))
    kind = decision.locator.kind if decision.locator else "whole"
    return ToolResult(payload=payload, content_type=_SLICE_TYPES.get(kind, artifact.content_type),
                      privacy=artifact.privacy, private=_private_to_viewer(artifact))


async def _serve_message(deps: GraphDeps, account: str, call: ToolCallRecord, ref: str, candidates: CandidateSet,
                         planned: RecallDecision) -> ToolResult:
    """Serve a transcript message (whole or lines): it is in the graph already, nothing is read from S3."""
    message = next(m for m in candidates.messages if m.id == planned.message_id)
    try:
        text = slice_payload(message.content.encode("utf-8"), planned.locator)
    except DerivationError as error:
        await _store(deps, account, call, ref, refuse_locator(deps.policy, planned, str(error)))
        raise ToolArgumentError(f"recall: {error}") from error
    decision = settle_recall(deps.policy, planned, text)
    if not decision.allowed:
        await _store(deps, account, call, ref, decision)
        return _denial(ref, decision)
    payload = text.encode("utf-8")
    await _store(deps, account, call, ref, decision, len(payload))
    return ToolResult(payload=payload, content_type="text/plain; charset=utf-8", privacy=message.privacy,
                      private=_private_to_viewer(message))


async def _serve(deps: GraphDeps, account: str, artifact: ArtifactRecord,
                 planned: RecallDecision) -> tuple[RecallDecision, str | None]:
    """Read, verify and slice the planned bytes: the final decision, and the text (``None`` when denied)."""
    async with deps.sessions() as session:
        try:
            raw = await read_artifact_payload(session, deps.artifacts, account, artifact.id)
        except (ArtifactNotFoundError, ArtifactIntegrityError) as error:
            unavailable = unavailable_evidence(deps.policy, planned, isinstance(error, ArtifactIntegrityError))
            return unavailable, None
    try:
        text = slice_payload(raw, planned.locator)
    except DerivationError as error:
        return refuse_locator(deps.policy, planned, str(error)), None
    settled = settle_recall(deps.policy, planned, text)
    return settled, text if settled.allowed else None


async def _viewer_inputs(session: AsyncSession, limits: CandidateLimits, account: str, call: ToolCallRecord,
                         ref: str) -> tuple[CandidateSet, GenerationBoundary]:
    """The candidate set and boundary the calling participant's contexts are assembled from."""
    participant = await conversations.get_participant(session, account, call.participant_id)
    config = await conversations.participant_config(session, account, call.participant_id)
    conversation_id = (await get_branch(session, account, call.branch_id)).conversation_id
    # A full id outside the bounded pools is loaded too: the gates still decide whether it is visible.
    candidates = await load_candidates(session, account, conversation_id, call.branch_id, limits,
                                       extra_artifact_ids=[ref.strip()])
    boundary = GenerationBoundary(
        account_id=account, conversation_id=conversation_id, branch_id=call.branch_id,
        participant_id=call.participant_id, runtime_kind=call.runtime_kind,
        # The route the participant's contexts are assembled for (activities.turns.assemble_context).
        provider_route=participant.provider or "local", route_limit=conversations.route_limit(config),
        now=datetime.now(UTC),
    )
    return candidates, boundary


def _private_to_viewer(record: ArtifactRecord | MessageRecord) -> bool:
    """Bytes of a record not visible branch-wide stay with the participant that recalled them."""
    return record.visibility not in (VisibilityScope.BRANCH, VisibilityScope.CONVERSATION) or bool(
        record.shared_with)


async def _store(deps: GraphDeps, account: str, call: ToolCallRecord, ref: str, decision: RecallDecision,
                 served: int = 0) -> None:
    """Record the recall as an evidence request with its decision and the bytes served."""
    async with deps.sessions() as session, session.begin():
        await evidence.put_evidence_request(
            session, account, call, requested_ref=ref, artifact_id=decision.artifact_id,
            locator=decision.locator, decision=decision.decision, bytes_served=served)


def _denial(ref: str, decision: RecallDecision) -> ToolResult:
    body = {"recall": "denied", "id": ref, "reason": decision.answer}
    return ToolResult(payload=json.dumps(body, sort_keys=True).encode(), content_type="application/json")


_LOCATOR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": ("Which part to return; omit for the whole record. rows: CSV data rows (1-based, inclusive, "
                    "header kept); lines: text lines (1-based, inclusive); json_pointer: an RFC 6901 pointer "
                    "such as '/items/0'."),
    "properties": {
        "kind": {"type": "string", "enum": ["whole", "rows", "lines", "json_pointer"]},
        "start": {"type": "integer", "minimum": 1},
        "end": {"type": "integer", "minimum": 1},
        "pointer": {"type": "string", "maxLength": 1000},
    },
    "required": ["kind"],
    "additionalProperties": False,
}

TOOLS: tuple[RegisteredTool, ...] = (
    RegisteredTool(
        spec=ToolSpec(
            name=RECALL,
            result_kind="auto",
            # The arguments are an id; the result is raised to its source's class (ToolResult.privacy).
            privacy=PrivacyClass.PUBLIC,
            freshness=FreshnessClass.SESSION,
            key_args=("id", "locator"),
        ),
        description=(
            "Get the exact raw data behind an id you were shown: a memory ('m:3f2a91c0'), an artifact "
            "('a:3f2a91c0'), a tool call ('call_...') or an earlier message ('msg:3f2a91c0'), whole or a slice. "
            "Use it only when you need exact values."
        ),
        parameters={
            "type": "object",
            "properties": {
                "id": {"type": "string", "minLength": 1, "maxLength": 100,
                       "description": "The id as shown, e.g. 'm:3f2a91c0', 'a:3f2a91c0', 'call_...' or "
                                      "'msg:3f2a91c0'."},
                "locator": _LOCATOR_SCHEMA,
            },
            "required": ["id"],
            "additionalProperties": False,
        },
        run=_recall,
        max_attempts=3,
    ),
    RegisteredTool(
        spec=ToolSpec(
            name=REMEMBER,
            result_kind="json",
            privacy=PrivacyClass.USER,
            freshness=FreshnessClass.SESSION,
            key_args=("text",),
        ),
        description=(
            "Propose a lasting fact about the user (a preference, a standing instruction) to remember in later "
            "conversations. The user confirms or rejects it later; nothing is remembered unless they confirm."
        ),
        parameters={
            "type": "object",
            "properties": {
                "text": {"type": "string", "minLength": 1, "maxLength": 500,
                         "description": "The fact, e.g. 'Prefers amounts in EUR.'"},
            },
            "required": ["text"],
            "additionalProperties": False,
        },
        run=None,
        deferred=True,
        max_attempts=1,
    ),
)
"""The built-in runtime tools, for the registry."""


__all__ = ["RECALL", "REMEMBER", "TOOLS"]
