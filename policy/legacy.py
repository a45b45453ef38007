"""The legacy baseline: replay the branch transcript with every raw tool result.

This is what most agents send today and what Dossier is measured against. It
replays the active lineage's messages in order, each assistant tool call
followed by its raw result (or the call's status when no result was captured),
for every participant alike: replay knows nothing of visibility or privacy.

Token counts need no payloads: each artifact records ``result_tokens`` when it
is captured, so :func:`legacy_token_count` equals the count of
:func:`legacy_messages` without loading a byte from the artifact store.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from policy.enums import MessageRole
from policy.records import (
    ArtifactRecord,
    CandidateSet,
    ChatMessage,
    MessageRecord,
    ParticipantRecord,
    ToolCallRequest,
)
from policy.retention import RESULT_REMOVED_TEXT, result_removed
from policy.tokens import MESSAGE_OVERHEAD_TOKENS, TokenCounter, count_message


def _lineage_messages(candidates: CandidateSet) -> list[MessageRecord]:
    on_lineage = [m for m in candidates.messages if candidates.lineage.contains(m.branch_id, m.seq)]
    return sorted(on_lineage, key=lambda m: (m.seq, m.id))


def _steps(
    candidates: CandidateSet, participant: ParticipantRecord
) -> Iterator[tuple[ChatMessage | None, ToolCallRequest | None, ArtifactRecord | None]]:
    """Yields (message, None, None) for transcript messages and
    (None, call, artifact-or-None) for each tool result that follows them."""
    if participant.system_prompt:
        yield ChatMessage(role=MessageRole.SYSTEM, content=participant.system_prompt), None, None
    by_call = {artifact.call_id: artifact for artifact in candidates.artifacts}
    for message in _lineage_messages(candidates):
        yield (
            ChatMessage(role=message.role, content=message.content or None, tool_calls=message.tool_calls),
            None,
            None,
        )
        for call in message.tool_calls:
            yield None, call, by_call.get(call.call_id)


def _status_text(candidates: CandidateSet, call: ToolCallRequest) -> str:
    for record in candidates.tool_calls:
        if record.call_id == call.call_id:
            if result_removed(record.status.value, record.arguments, False):
                return RESULT_REMOVED_TEXT
            return f"[{record.status.value}] {record.last_error or record.waiting_for or ''}".rstrip()
    return "[no result recorded]"


def legacy_messages(
    candidates: CandidateSet,
    participant: ParticipantRecord,
    raw_results: Mapping[str, str],
) -> list[ChatMessage]:
    """The full replay, materialised.

    Args:
        candidates: the graph slice (its lineage decides which messages replay).
        participant: whose system prompt leads the replay.
        raw_results: decoded raw result text by artifact id.
    """
    out: list[ChatMessage] = []
    for message, call, artifact in _steps(candidates, participant):
        if message is not None:
            out.append(message)
            continue
        assert call is not None
        content = raw_results[artifact.id] if artifact is not None else _status_text(candidates, call)
        out.append(ChatMessage(role=MessageRole.TOOL, content=content, tool_call_id=call.call_id))
    return out


def legacy_message_count(candidates: CandidateSet, participant: ParticipantRecord) -> int:
    """How many messages full replay sends."""
    return sum(1 for _ in _steps(candidates, participant))


def legacy_token_count(candidates: CandidateSet, participant: ParticipantRecord, counter: TokenCounter) -> int:
    """Tokens full replay costs, from stored per-artifact counts."""
    total = 0
    for message, call, artifact in _steps(candidates, participant):
        if message is not None:
            total += count_message(message, counter)
        elif artifact is not None:
            total += artifact.result_tokens + MESSAGE_OVERHEAD_TOKENS
        else:
            assert call is not None
            total += counter(_status_text(candidates, call)) + MESSAGE_OVERHEAD_TOKENS
    return total
