"""ORM rows to records. Every conversion happens inside the caller's session,
on columns already loaded: nothing here can trigger I/O.

Records loaded for a snapshot (``snapshot_seq``) show the graph as it was at
that ``seq``: a tool call's state comes from the last history entry at or
before it, and links to memories written later (supersession, conflicts) are
hidden. Loading the same snapshot twice therefore gives equal records even
if the graph moved on in between.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policy.enums import (
    FreshnessClass,
    MessageRole,
    PrivacyClass,
    PromotionPolicy,
    ResolutionStatus,
    RuntimeKind,
    ToolCallStatus,
    VisibilityScope,
)
from policy.records import (
    ArtifactRecord,
    CheckpointRecord,
    ContextAssemblyRecord,
    Locator,
    MessageRecord,
    ParticipantRecord,
    PolicyDecisionRecord,
    SkillStateRecord,
    ToolCallRecord,
    ToolCallRequest,
    ToolMemoryRecord,
    UserMemoryRecord,
)
from store.models import (
    Branch,
    ContextAssembly,
    ContinuationCheckpoint,
    Conversation,
    Message,
    ModelRun,
    Participant,
    PolicyDecision,
    SkillState,
    ToolArtifact,
    ToolCall,
    ToolMemory,
    UserMemory,
)
from store.records import AssemblyTimings, BranchRecord, ConversationRecord, ModelRunRecord, StoredContextAssembly


def to_conversation(row: Conversation) -> ConversationRecord:
    """Convert a conversation row."""
    return ConversationRecord(
        id=row.id,
        account_id=row.account_id,
        title=row.title,
        root_branch_id=row.root_branch_id or "",
        snapshot_seq=row.next_seq - 1,
        created_at=row.created_at,
    )


def to_branch(row: Branch) -> BranchRecord:
    """Convert a branch row."""
    return BranchRecord(
        id=row.id,
        conversation_id=row.conversation_id,
        name=row.name,
        parent_branch_id=row.parent_branch_id,
        fork_message_id=row.fork_message_id,
        fork_seq=row.fork_seq,
        created_at=row.created_at,
    )


def to_participant(row: Participant) -> ParticipantRecord:
    """Convert a participant row."""
    return ParticipantRecord(
        id=row.id,
        name=row.name,
        role=row.role,  # type: ignore[arg-type]  # CHECK constraint keeps it in the Literal
        provider=row.provider,
        model=row.model,
        system_prompt=row.system_prompt,
        parent_participant_id=row.parent_participant_id,
    )


def tool_call_requests(calls: list[Any]) -> tuple[ToolCallRequest, ...]:
    """``messages.tool_calls`` JSON to records."""
    return tuple(
        ToolCallRequest(call_id=c["call_id"], name=c["name"], arguments=c.get("arguments") or {}) for c in calls
    )


def to_message(row: Message) -> MessageRecord:
    """Convert a message row."""
    return MessageRecord(
        id=row.id,
        branch_id=row.branch_id,
        seq=row.seq,
        role=MessageRole(row.role),
        content=row.content,
        author_participant_id=row.author_participant_id,
        speaker_label=row.speaker_label,
        is_directive=row.is_directive,
        tool_calls=tool_call_requests(row.tool_calls),
        model_run_id=row.model_run_id,
        visibility=VisibilityScope(row.visibility),
        shared_with=tuple(row.shared_with),
    )


def tool_call_state(row: ToolCall, snapshot_seq: int | None = None) -> dict[str, Any]:
    """The mutable state of a tool call as of ``snapshot_seq`` (now when ``None``).

    Args:
        row: the tool call.
        snapshot_seq: the snapshot; history entries after it are ignored.

    Returns:
        ``status``, ``attempts``, ``last_error``, ``waiting_for`` and
        ``retry_critical`` at the snapshot.
    """
    entries = [e for e in row.history if snapshot_seq is None or e["seq"] <= snapshot_seq]
    if not entries:
        return {
            "status": ToolCallStatus(row.status),
            "attempts": row.attempts,
            "last_error": row.last_error,
            "waiting_for": row.waiting_for,
            "retry_critical": row.retry_critical,
        }
    last = entries[-1]
    errors = [e["error"] for e in entries if e.get("error") is not None]
    return {
        "status": ToolCallStatus(last["status"]),
        "attempts": last["attempt"],
        "last_error": errors[-1] if errors else None,
        "waiting_for": last.get("waiting_for"),
        "retry_critical": bool(last.get("retry_critical", row.retry_critical)),
    }


def to_tool_call(row: ToolCall, snapshot_seq: int | None = None) -> ToolCallRecord:
    """Convert a tool-call row, as of ``snapshot_seq`` (now when ``None``)."""
    return ToolCallRecord(
        id=row.id,
        call_id=row.call_id,
        name=row.name,
        arguments=row.arguments,
        branch_id=row.branch_id,
        seq=row.seq,
        participant_id=row.participant_id,
        model_run_id=row.model_run_id,
        runtime_kind=RuntimeKind(row.runtime_kind),
        visibility=VisibilityScope(row.visibility),
        shared_with=tuple(row.shared_with),
        privacy=PrivacyClass(row.privacy),
        **tool_call_state(row, snapshot_seq),
    )


def to_artifact(row: ToolArtifact) -> ArtifactRecord:
    """Convert an artifact row (metadata only; the payload is never loaded here)."""
    return ArtifactRecord(
        id=row.id,
        tool_call_id=row.tool_call_id,
        call_id=row.call_id,
        tool_name=row.tool_name,
        status=ToolCallStatus(row.status),
        branch_id=row.branch_id,
        seq=row.seq,
        owner_participant_id=row.owner_participant_id,
        model_run_id=row.model_run_id,
        runtime_kind=RuntimeKind(row.runtime_kind),
        visibility=VisibilityScope(row.visibility),
        shared_with=tuple(row.shared_with),
        privacy=PrivacyClass(row.privacy),
        content_type=row.content_type,
        sha256=row.sha256,
        result_bytes=row.result_bytes,
        arguments_bytes=row.arguments_bytes,
        storage=row.storage,  # type: ignore[arg-type]  # CHECK constraint keeps it in the Literal
        storage_key=row.storage_key,
        result_tokens=row.result_tokens,
        tool_version=row.tool_version,
        captured_at=row.captured_at,
        promotion=PromotionPolicy(row.promotion),
    )


def to_tool_memory(
    row: ToolMemory,
    snapshot_seq: int | None = None,
    memory_seqs: Mapping[str, int] | None = None,
) -> ToolMemoryRecord:
    """Convert a tool-memory row, as of ``snapshot_seq`` (now when ``None``).

    Args:
        row: the memory.
        snapshot_seq: hide links to memories written after this ``seq``.
        memory_seqs: ``seq`` of the memories named in ``conflicts_with`` and
            ``supersedes``; an id missing here is treated as written later.

    Returns:
        The record.
    """
    conflicts = tuple(row.conflicts_with)
    supersedes = tuple(row.supersedes)
    superseded_by = row.superseded_by
    if snapshot_seq is not None:
        seqs = memory_seqs or {}

        def visible(memory_id: str) -> bool:
            return seqs.get(memory_id, snapshot_seq + 1) <= snapshot_seq

        conflicts = tuple(m for m in conflicts if visible(m))
        supersedes = tuple(m for m in supersedes if visible(m))
        if row.superseded_seq is None or row.superseded_seq > snapshot_seq:
            superseded_by = None
    return ToolMemoryRecord(
        id=row.id,
        branch_id=row.branch_id,
        seq=row.seq,
        owner_participant_id=row.owner_participant_id,
        model_run_id=row.model_run_id,
        runtime_kind=RuntimeKind(row.runtime_kind),
        source_artifact_ids=tuple(row.source_artifact_ids),
        source_tool=row.source_tool,
        subject_key=row.subject_key,
        title=row.title,
        summary=row.summary,
        payload=row.payload,
        confidence=row.confidence,
        confidence_source=row.confidence_source,
        rationale=row.rationale,
        limitations=row.limitations,
        visibility=VisibilityScope(row.visibility),
        shared_with=tuple(row.shared_with),
        privacy=PrivacyClass(row.privacy),
        freshness=FreshnessClass(row.freshness),
        observed_at=row.observed_at,
        stale_after=row.stale_after,
        revalidate_with=tuple(row.revalidate_with),
        locators=tuple(Locator.model_validate(loc) for loc in row.locators),
        resolution=ResolutionStatus(row.resolution),
        repair_attempts=row.repair_attempts,
        conflicts_with=conflicts,
        supersedes=supersedes,
        superseded_by=superseded_by,
        promotion=PromotionPolicy(row.promotion),
        promoted_from=tuple(row.promoted_from),
    )


def to_user_memory(row: UserMemory) -> UserMemoryRecord:
    """Convert a user-memory row."""
    return UserMemoryRecord(
        id=row.id,
        seq=row.seq,
        text=row.text,
        privacy=PrivacyClass(row.privacy),
        participant_id=row.participant_id,
    )


def to_skill_state(row: SkillState) -> SkillStateRecord:
    """Convert a skill-state row."""
    return SkillStateRecord(
        id=row.id,
        branch_id=row.branch_id,
        seq=row.seq,
        participant_id=row.participant_id,
        skill=row.skill,
        state=row.state,
        active=row.active,
        visibility=VisibilityScope(row.visibility),
        privacy=PrivacyClass(row.privacy),
    )


def to_checkpoint(row: ContinuationCheckpoint) -> CheckpointRecord:
    """Convert a continuation-checkpoint row."""
    return CheckpointRecord(
        id=row.id,
        branch_id=row.branch_id,
        seq=row.seq,
        participant_id=row.participant_id,
        kind=row.kind,  # type: ignore[arg-type]  # CHECK constraint keeps it in the Literal
        state=row.state,
        references=tuple(row.references),
        model_run_id=row.model_run_id,
        visibility=VisibilityScope(row.visibility),
        privacy=PrivacyClass(row.privacy),
    )


def to_model_run(row: ModelRun) -> ModelRunRecord:
    """Convert a model-run row."""
    return ModelRunRecord(
        id=row.id,
        conversation_id=row.conversation_id,
        branch_id=row.branch_id,
        participant_id=row.participant_id,
        runtime_kind=RuntimeKind(row.runtime_kind),
        status=row.status,  # type: ignore[arg-type]  # CHECK constraint keeps it in the Literal
        provider=row.provider,
        model=row.model,
        message_id=row.message_id,
        workflow_id=row.workflow_id,
        parent_model_run_id=row.parent_model_run_id,
        context_assembly_id=row.context_assembly_id,
        error=row.error,
        usage=row.usage,
        started_at=row.started_at,
        finished_at=row.finished_at,
    )


def to_decision(row: PolicyDecision) -> PolicyDecisionRecord:
    """Convert a policy-decision row."""
    return PolicyDecisionRecord.model_validate(
        {
            "kind": row.kind,
            "subject_ref": row.subject_ref,
            "outcome": row.outcome,
            "reason": row.reason,
            "omission": row.omission,
            "policy_version": row.policy_version,
        }
    )


def to_stored_assembly(
    row: ContextAssembly,
    decisions: list[PolicyDecision],
    messages: list[dict[str, Any]] | None = None,
) -> StoredContextAssembly:
    """Convert an assembly row and its decision rows."""
    record = ContextAssemblyRecord(
        policy_version=row.policy_version,
        assembler_version=row.assembler_version,
        snapshot_seq=row.snapshot_seq,
        legacy_message_count=row.legacy_message_count,
        assembled_message_count=row.assembled_message_count,
        legacy_tokens=row.legacy_tokens,
        assembled_tokens=row.assembled_tokens,
        token_budget=row.token_budget,
        selected_refs=tuple(row.selected_refs),
        rehydrated_refs=tuple(row.rehydrated_refs),
        omitted_counts=dict(row.omitted_counts),
        content_sha256=row.content_sha256,
    )
    return StoredContextAssembly(
        id=row.id,
        conversation_id=row.conversation_id,
        branch_id=row.branch_id,
        participant_id=row.participant_id,
        model_run_id=row.model_run_id,
        runtime_kind=RuntimeKind(row.runtime_kind),
        provider_route=row.provider_route,
        generation_at=row.generation_at,
        record=record,
        decisions=tuple(to_decision(d) for d in decisions),
        messages=None if messages is None else tuple(messages),
        timings=AssemblyTimings(
            graph_query_ms=row.graph_query_ms, policy_ms=row.policy_ms, serialise_ms=row.serialise_ms
        ),
        created_at=row.created_at,
    )
