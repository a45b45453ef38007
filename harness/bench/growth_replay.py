"""The growth benchmark's baseline: full transcript replay, as a caller pays for it."""

from __future__ import annotations

import time

from sqlalchemy import select

from activities.deps import GraphDeps
from policy.payloads import decode_payload
from policy.enums import MessageRole, PrivacyClass, ToolCallStatus, VisibilityScope
from policy.legacy import legacy_messages
from policy.records import (
    ArtifactRecord,
    CandidateSet,
    MessageRecord,
    ParticipantRecord,
    ToolCallRecord,
    ToolCallRequest,
)
from policy.tokens import count_message
from store.branches import load_lineage
from store.models import Message, Participant, ToolArtifact, ToolCall

from harness.bench.growth_graph import LoadedHistory


async def replay_transcript(deps: GraphDeps, loaded: LoadedHistory) -> dict[str, float]:
    """Full legacy replay as a caller pays for it: load, build, count.

    Loads the lineage, every message on it, every tool call and every
    artifact of the conversation with its raw payload (SQLAlchemy core rows,
    records built without re-validation: the cheapest honest way), builds the
    replay with :func:`policy.legacy.legacy_messages` and counts its tokens.
    """
    start = time.perf_counter()
    a, c = loaded.account_id, loaded.conversation_id
    async with deps.sessions() as session:
        lineage = await load_lineage(session, a, loaded.active_branch_id)
        msg_rows = (await session.execute(
            select(Message.id, Message.branch_id, Message.seq, Message.role, Message.content,
                   Message.author_participant_id, Message.tool_calls)
            .where(Message.account_id == a, Message.conversation_id == c).order_by(Message.seq)
        )).all()
        call_rows = (await session.execute(
            select(ToolCall.id, ToolCall.call_id, ToolCall.name, ToolCall.status, ToolCall.branch_id, ToolCall.seq,
                   ToolCall.participant_id, ToolCall.last_error, ToolCall.waiting_for)
            .where(ToolCall.account_id == a, ToolCall.conversation_id == c)
        )).all()
        art_rows = (await session.execute(
            select(ToolArtifact.id, ToolArtifact.tool_call_id, ToolArtifact.call_id, ToolArtifact.tool_name,
                   ToolArtifact.status, ToolArtifact.branch_id, ToolArtifact.seq, ToolArtifact.owner_participant_id,
                   ToolArtifact.visibility, ToolArtifact.privacy, ToolArtifact.content_type,
                   ToolArtifact.result_bytes, ToolArtifact.arguments_bytes, ToolArtifact.storage,
                   ToolArtifact.captured_at, ToolArtifact.inline_payload)
            .where(ToolArtifact.account_id == a, ToolArtifact.conversation_id == c)
        )).all()
        system_prompt = await session.scalar(select(Participant.system_prompt).where(
            Participant.account_id == a, Participant.id == loaded.participant_id))
    load_ms = (time.perf_counter() - start) * 1000

    start = time.perf_counter()
    on_lineage = {(r.branch_id, r.seq) for r in msg_rows if lineage.contains(r.branch_id, r.seq)}
    messages = tuple(
        MessageRecord.model_construct(
            id=r.id, branch_id=r.branch_id, seq=r.seq, role=MessageRole(r.role), content=r.content,
            author_participant_id=r.author_participant_id,
            tool_calls=tuple(ToolCallRequest.model_construct(**tc) for tc in r.tool_calls),
        )
        for r in msg_rows if (r.branch_id, r.seq) in on_lineage
    )
    tool_calls = tuple(
        ToolCallRecord.model_construct(
            id=r.id, call_id=r.call_id, name=r.name, arguments={}, status=ToolCallStatus(r.status),
            branch_id=r.branch_id, seq=r.seq, participant_id=r.participant_id, last_error=r.last_error,
            waiting_for=r.waiting_for,
        )
        for r in call_rows
    )
    artifacts = tuple(
        ArtifactRecord.model_construct(
            id=r.id, tool_call_id=r.tool_call_id, call_id=r.call_id, tool_name=r.tool_name,
            status=ToolCallStatus(r.status), branch_id=r.branch_id, seq=r.seq,
            owner_participant_id=r.owner_participant_id, visibility=VisibilityScope(r.visibility),
            privacy=PrivacyClass(r.privacy), content_type=r.content_type, result_bytes=r.result_bytes,
            arguments_bytes=r.arguments_bytes, storage=r.storage, captured_at=r.captured_at,
        )
        for r in art_rows
    )
    raw = {r.id: decode_payload(r.inline_payload) for r in art_rows}
    candidates = CandidateSet.model_construct(
        snapshot_seq=max((r.seq for r in msg_rows), default=0), lineage=lineage, participants=(),
        messages=messages, tool_calls=tool_calls, artifacts=artifacts,
    )
    participant = ParticipantRecord.model_construct(id=loaded.participant_id, name="assistant-0",
                                                    role="assistant", system_prompt=system_prompt or "")
    replay = legacy_messages(candidates, participant, raw)
    build_ms = (time.perf_counter() - start) * 1000

    start = time.perf_counter()
    tokens = sum(count_message(message, deps.counter) for message in replay)
    count_ms = (time.perf_counter() - start) * 1000
    return {
        "load_ms": round(load_ms, 3),
        "build_ms": round(build_ms, 3),
        "count_ms": round(count_ms, 3),
        "total_ms": round(load_ms + build_ms + count_ms, 3),
        "messages": len(replay),
        "tokens": tokens,
    }
