"""Small record builders with sensible defaults, so policy tests read as tables.

The default world: a root branch ``br-root``, forked at seq 10 into the active
branch ``br-active`` and a sibling ``br-sibling``. The viewer ``p-viewer``
("Analyst") generates on ``br-active`` through the ``local`` route with a
budget large enough that nothing is dropped for tokens unless a test says so.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from policy.assembler import AssemblyResult
from policy.enums import (
    DecisionOutcome,
    FreshnessClass,
    MessageRole,
    OmissionReason,
    PrivacyClass,
    RuntimeKind,
    ToolCallStatus,
    VisibilityScope,
)
from policy.records import (
    ArtifactRecord,
    CandidateSet,
    CheckpointRecord,
    EvidenceRequest,
    GenerationBoundary,
    Lineage,
    LineageStep,
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

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
"""The generation's logical time."""

ROOT = "br-root"
ACTIVE = "br-active"
SIBLING = "br-sibling"
FORK_SEQ = 10
"""Last seq of ``br-root`` that belongs to the active lineage."""

VIEWER = "p-viewer"
OTHER = "p-other"
CHILD = "p-child"

BIG_BUDGET = 100_000


def lineage(*steps: tuple[str, int | None]) -> Lineage:
    """``lineage((ROOT, 10), (ACTIVE, None))``; defaults to root -> active at FORK_SEQ."""
    steps = steps or ((ROOT, FORK_SEQ), (ACTIVE, None))
    return Lineage(steps=tuple(LineageStep(branch_id=b, until_seq=u) for b, u in steps))


def participants() -> tuple[ParticipantRecord, ...]:
    """The viewer, a second assistant and the viewer's subagent child."""
    return (
        ParticipantRecord(id=VIEWER, name="Analyst", system_prompt="You are Analyst, a careful data assistant."),
        ParticipantRecord(id=OTHER, name="Critic"),
        ParticipantRecord(id=CHILD, name="Researcher", role="subagent", parent_participant_id=VIEWER),
    )


def boundary(**overrides: Any) -> GenerationBoundary:
    """A generation boundary for the viewer on the active branch."""
    fields: dict[str, Any] = dict(
        account_id="acct-1",
        conversation_id="conv-1",
        branch_id=ACTIVE,
        participant_id=VIEWER,
        runtime_kind=RuntimeKind.CHAT,
        provider_route="local",
        token_budget=BIG_BUDGET,
        now=NOW,
    )
    fields.update(overrides)
    return GenerationBoundary(**fields)


def evidence(artifact_id: str, kind: str = "whole", start: int | None = None, end: int | None = None,
             pointer: str | None = None) -> EvidenceRequest:
    """An evidence request, optionally with a locator."""
    locator = None
    if kind != "whole" or start is not None or pointer is not None:
        locator = Locator(artifact_id=artifact_id, kind=kind, start=start, end=end, pointer=pointer)
    return EvidenceRequest(artifact_id=artifact_id, locator=locator, reason="test")


def candidates(**groups: Any) -> CandidateSet:
    """A candidate set in the default world; pass record tuples/lists by group name."""
    fields: dict[str, Any] = dict(snapshot_seq=1000, lineage=lineage(), participants=participants())
    for name, value in groups.items():
        fields[name] = tuple(value) if isinstance(value, (list, tuple)) else value
    return CandidateSet(**fields)


def message(
    id: str,
    seq: int,
    role: MessageRole | str = MessageRole.USER,
    content: str | None = None,
    *,
    branch: str = ACTIVE,
    author: str | None = None,
    **overrides: Any,
) -> MessageRecord:
    """A transcript message; an assistant message is the viewer's unless ``author`` says otherwise."""
    role = MessageRole(role)
    if author is None and role is MessageRole.ASSISTANT:
        author = VIEWER
    return MessageRecord(
        id=id,
        branch_id=branch,
        seq=seq,
        role=role,
        content=f"{role.value} message {id}" if content is None else content,
        author_participant_id=author,
        **overrides,
    )


def tool_call(
    id: str,
    seq: int,
    status: ToolCallStatus | str = ToolCallStatus.PENDING,
    *,
    branch: str = ACTIVE,
    participant: str = VIEWER,
    name: str = "search_docs",
    arguments: dict[str, Any] | None = None,
    **overrides: Any,
) -> ToolCallRecord:
    """A tool call with ``call_id`` ``call-<id>``."""
    return ToolCallRecord(
        id=id,
        call_id=f"call-{id}",
        name=name,
        arguments={"query": id} if arguments is None else arguments,
        status=ToolCallStatus(status),
        branch_id=branch,
        seq=seq,
        participant_id=participant,
        **overrides,
    )


def artifact(
    id: str,
    seq: int,
    raw: bytes = b"{}",
    *,
    call: ToolCallRecord | None = None,
    branch: str = ACTIVE,
    owner: str = VIEWER,
    privacy: PrivacyClass = PrivacyClass.USER,
    visibility: VisibilityScope = VisibilityScope.BRANCH,
    content_type: str = "application/json",
    result_tokens: int = 0,
    **overrides: Any,
) -> ArtifactRecord:
    """Metadata of a raw payload; ``call`` ties it to a tool call (defaults to ``tc-<id>``)."""
    fields: dict[str, Any] = dict(
        id=id,
        tool_call_id=call.id if call else f"tc-{id}",
        call_id=call.call_id if call else f"call-tc-{id}",
        tool_name=call.name if call else "search_docs",
        status=call.status if call else ToolCallStatus.SUCCEEDED,
        branch_id=branch,
        seq=seq,
        owner_participant_id=owner,
        visibility=visibility,
        privacy=privacy,
        content_type=content_type,
        sha256=hashlib.sha256(raw).hexdigest(),
        result_bytes=len(raw),
        arguments_bytes=2,
        storage="inline",
        result_tokens=result_tokens,
        captured_at=NOW - timedelta(minutes=5),
    )
    fields.update(overrides)
    return ArtifactRecord(**fields)


def memory(
    id: str,
    seq: int,
    *,
    summary: str | None = None,
    title: str | None = None,
    sources: Iterable[str] = (),
    branch: str = ACTIVE,
    owner: str = VIEWER,
    privacy: PrivacyClass = PrivacyClass.USER,
    visibility: VisibilityScope = VisibilityScope.BRANCH,
    freshness: FreshnessClass = FreshnessClass.DURABLE,
    observed_at: datetime | None = None,
    source_tool: str = "search_docs",
    **overrides: Any,
) -> ToolMemoryRecord:
    """A fresh, durable, branch-visible tool memory owned by the viewer."""
    return ToolMemoryRecord(
        id=id,
        branch_id=branch,
        seq=seq,
        owner_participant_id=owner,
        source_artifact_ids=tuple(sources),
        source_tool=source_tool,
        subject_key=overrides.pop("subject_key", f"{source_tool}:{id}"),
        title=f"{source_tool}(topic={id})" if title is None else title,
        summary=f"{id} summary value=42" if summary is None else summary,
        visibility=visibility,
        privacy=privacy,
        freshness=freshness,
        observed_at=NOW - timedelta(minutes=1) if observed_at is None else observed_at,
        **overrides,
    )


def user_memory(id: str, seq: int, text: str | None = None, **overrides: Any) -> UserMemoryRecord:
    """A personalisation fact."""
    return UserMemoryRecord(id=id, seq=seq, text=f"user fact {id}" if text is None else text, **overrides)


def checkpoint(id: str, seq: int, kind: str = "tool_loop", *, branch: str = ACTIVE, participant: str = VIEWER,
               **overrides: Any) -> CheckpointRecord:
    """A continuation checkpoint (private to its participant by default)."""
    return CheckpointRecord(id=id, branch_id=branch, seq=seq, participant_id=participant, kind=kind,
                            state=overrides.pop("state", {"step": seq}), **overrides)


def skill(id: str, seq: int, name: str = "report", *, branch: str = ACTIVE, participant: str = VIEWER,
          **overrides: Any) -> SkillStateRecord:
    """An active skill state (private to its participant by default)."""
    return SkillStateRecord(id=id, branch_id=branch, seq=seq, participant_id=participant, skill=name,
                            state=overrides.pop("state", {"page": seq}), **overrides)


def call_request(call: ToolCallRecord) -> ToolCallRequest:
    """The request an assistant message carries for ``call``."""
    return ToolCallRequest(call_id=call.call_id, name=call.name, arguments=call.arguments)


# --------------------------------------------------------------------------- result readers


def decisions_for(result: AssemblyResult, ref: str) -> list[PolicyDecisionRecord]:
    """Every decision taken about ``ref``, in order."""
    return [d for d in result.decisions if d.subject_ref == ref]


def omission_of(result: AssemblyResult, ref: str) -> OmissionReason | None:
    """The omission reason recorded for ``ref`` (``None`` when it was not omitted)."""
    reasons = [d.omission for d in decisions_for(result, ref) if d.omission is not None]
    assert len(reasons) <= 1, f"{ref} omitted more than once: {reasons}"
    return reasons[0] if reasons else None


def outcome_of(result: AssemblyResult, ref: str) -> DecisionOutcome:
    """The last decision outcome for ``ref``."""
    found = decisions_for(result, ref)
    assert found, f"no decision about {ref}"
    return found[-1].outcome


def selected(result: AssemblyResult, ref: str) -> bool:
    """Whether ``ref`` reached the context."""
    return ref in result.record.selected_refs


def system_text(result: AssemblyResult) -> str:
    """The leading system messages (the participant's prompt, then the runtime context), joined."""
    leading = []
    for message in result.messages:
        if message.role is not MessageRole.SYSTEM:
            break
        leading.append(message.content or "")
    return "\n\n".join(leading)


def transcript(result: AssemblyResult) -> list[tuple[str, str]]:
    """``(role, content)`` of every message after the leading system messages."""
    messages = list(result.messages)
    while messages and messages[0].role is MessageRole.SYSTEM:
        messages = messages[1:]
    return [(m.role.value, m.content or "") for m in messages]
