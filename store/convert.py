"""ORM rows to records. Every conversion happens inside the caller's session,
on columns already loaded: nothing here can trigger I/O.

A record takes every column of the row that has a field of the same name
(:func:`_record`); pydantic turns column strings into the records' enums and
arrays into tuples. Only what is not a plain column is written out here.

Records loaded for a snapshot (``snapshot_seq``) show the graph as it was at
that ``seq``: a tool call's state comes from the last history entry at or
before it, and links to memories written later (supersession, conflicts) are
hidden. Loading the same snapshot twice therefore gives equal records even
if the graph moved on in between.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel
from sqlalchemy import inspect as sa_inspect

from policy.enums import ToolCallStatus
from policy.records import (
    ArtifactRecord,
    CheckpointRecord,
    ContextAssemblyRecord,
    GenerationBoundary,
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
    Base,
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
from store.records import (
    AssemblyTimings,
    BranchRecord,
    ConversationRecord,
    ModelRunRecord,
    ReplayInputs,
    StoredContextAssembly,
)

R = TypeVar("R", bound=BaseModel)


@functools.cache
def _shared_columns(record_type: type[BaseModel], model: type[Base]) -> tuple[str, ...]:
    """The record's fields that are columns of the model, by name."""
    columns = {attribute.key for attribute in sa_inspect(model).column_attrs}
    return tuple(name for name in record_type.model_fields if name in columns)


def _record(record_type: type[R], row: Base, **fields: Any) -> R:
    """``record_type`` from the row's columns of the same names, with ``fields`` on top.

    A column given in ``fields`` is not read from the row (a deferred column, such
    as an assembly's messages, would raise instead of loading).
    """
    values = {name: getattr(row, name) for name in _shared_columns(record_type, type(row)) if name not in fields}
    values.update(fields)
    return record_type.model_validate(values)


def to_conversation(row: Conversation) -> ConversationRecord:
    """Convert a conversation row."""
    return _record(ConversationRecord, row, root_branch_id=row.root_branch_id or "", snapshot_seq=row.next_seq - 1)


def to_branch(row: Branch) -> BranchRecord:
    """Convert a branch row."""
    return _record(BranchRecord, row)


def to_participant(row: Participant) -> ParticipantRecord:
    """Convert a participant row."""
    return _record(ParticipantRecord, row)


def tool_call_requests(calls: list[Any]) -> tuple[ToolCallRequest, ...]:
    """``messages.tool_calls`` JSON to records."""
    return tuple(
        ToolCallRequest(call_id=c["call_id"], name=c["name"], arguments=c.get("arguments") or {}) for c in calls
    )


def to_message(row: Message) -> MessageRecord:
    """Convert a message row."""
    return _record(MessageRecord, row, tool_calls=tool_call_requests(row.tool_calls))


def tool_call_state(row: ToolCall, snapshot_seq: int | None = None) -> dict[str, Any]:
    """The mutable state of a tool call as of ``snapshot_seq`` (now when ``None``).

    Args:
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
    return _record(ToolCallRecord, row, **tool_call_state(row, snapshot_seq))


def to_artifact(row: ToolArtifact) -> ArtifactRecord:
    """Convert an artifact row (metadata only; the payload is never loaded here)."""
    return _record(ArtifactRecord, row)


def to_tool_memory(
    row: ToolMemory,
    snapshot_seq: int | None = None,
    memory_seqs: Mapping[str, int] | None = None,
    superseded_at: str | None = None,
) -> ToolMemoryRecord:
    """Convert a tool-memory row, as of ``snapshot_seq`` (now when ``None``).

    Args:
        snapshot_seq: hide links to memories written after this ``seq``, and read the
            ``resolution`` it had then.
        memory_seqs: ``seq`` of the memories named in ``conflicts_with`` and
            ``supersedes``; an id missing here is treated as written later.
        superseded_at: the memory's newest replacement written by ``snapshot_seq`` when its
            ``superseded_seq`` has since moved past it (superseded again on another branch).
    """
    conflicts = tuple(row.conflicts_with)
    supersedes = tuple(row.supersedes)
    superseded_by = row.superseded_by
    resolution = row.resolution
    if snapshot_seq is not None:
        resolution = resolution_at(row, snapshot_seq)
        seqs = memory_seqs or {}

        def visible(memory_id: str) -> bool:
            return seqs.get(memory_id, snapshot_seq + 1) <= snapshot_seq

        conflicts = tuple(m for m in conflicts if visible(m))
        supersedes = tuple(m for m in supersedes if visible(m))
        if row.superseded_seq is None or row.superseded_seq > snapshot_seq:
            superseded_by = superseded_at
    return _record(ToolMemoryRecord, row, conflicts_with=conflicts, supersedes=supersedes,
                   superseded_by=superseded_by, resolution=resolution)


def resolution_at(row: ToolMemory, snapshot_seq: int) -> str:
    """The memory's ``resolution`` as of ``snapshot_seq``: the status the first later change replaced."""
    for change in row.resolution_history:
        if change["seq"] > snapshot_seq:
            return str(change["replaced"])
    return row.resolution


def to_user_memory(row: UserMemory) -> UserMemoryRecord:
    """Convert a user-memory row."""
    return _record(UserMemoryRecord, row)


def to_skill_state(row: SkillState) -> SkillStateRecord:
    """Convert a skill-state row."""
    return _record(SkillStateRecord, row)


def skill_state_at(row: SkillState, snapshot_seq: int) -> SkillStateRecord | None:
    """The skill state as of ``snapshot_seq``: the row, or the version of its history written last by then.

    Returns:
        The state at the snapshot; ``None`` when the skill had no state yet.
    """
    if row.seq <= snapshot_seq:
        return to_skill_state(row)
    earlier = [version for version in row.history if version["seq"] <= snapshot_seq]
    if not earlier:
        return None
    version = max(earlier, key=lambda v: v["seq"])
    return _record(SkillStateRecord, row, seq=version["seq"], state=version["state"], active=version["active"],
                   visibility=version["visibility"], privacy=version["privacy"])


def to_checkpoint(row: ContinuationCheckpoint) -> CheckpointRecord:
    """Convert a continuation-checkpoint row."""
    return _record(CheckpointRecord, row)


def to_model_run(row: ModelRun) -> ModelRunRecord:
    """Convert a model-run row."""
    return _record(ModelRunRecord, row)


def to_decision(row: PolicyDecision) -> PolicyDecisionRecord:
    """Convert a policy-decision row."""
    return _record(PolicyDecisionRecord, row)


def to_stored_assembly(
    row: ContextAssembly,
    decisions: list[PolicyDecision],
    messages: list[dict[str, Any]] | None = None,
) -> StoredContextAssembly:
    """Convert an assembly row and its decision rows."""
    return _record(
        StoredContextAssembly,
        row,
        record=_record(ContextAssemblyRecord, row),
        decisions=tuple(to_decision(d) for d in decisions),
        messages=None if messages is None else tuple(messages),
        timings=_record(AssemblyTimings, row),
        replay=_replay_inputs(row),
    )


def _replay_inputs(row: ContextAssembly) -> ReplayInputs | None:
    """The row's replay inputs, or ``None`` when any is missing (a row stored before them)."""
    if row.boundary is None or row.candidate_limits is None or row.user_memory_seq is None \
            or row.user_memory_ids is None:
        return None
    return ReplayInputs(boundary=GenerationBoundary.model_validate(row.boundary),
                        candidate_limits=row.candidate_limits, user_memory_seq=row.user_memory_seq,
                        user_memory_ids=tuple(row.user_memory_ids), previous_assembly_id=row.previous_assembly_id)
