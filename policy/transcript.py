"""The transcript: stage 6, which lineage messages a participant reads verbatim.

Moderator directives and the current user message are protected; the
runtime mode's window of recent messages, the opening request and the
message a forked branch forked from compete for the budget as their class
says; older messages are omitted and counted. Messages are recast for the
reader: another participant's answer reads as a labelled user line, never as
the reader's own words.
"""

from __future__ import annotations

from policy.enums import DecisionOutcome, MessageRole, OmissionReason, RecordClass
from policy.gates import admit
from policy.records import CandidateSet, ChatMessage, MessageRecord, ParticipantRecord
from policy.selection import Item, SelectionContext, by_seq

DIRECTIVE_SEPARATOR = " directive: "
"""``<label> directive: <text>``: a moderator directive, as a labelled user turn."""
SPEAKER_SEPARATOR = ": "
"""``<label>: <text>``: a labelled speaker (another participant, a named user)."""


def transcript_items(ctx: SelectionContext, candidates: CandidateSet) -> list[Item]:
    """Lineage messages: the window and the opening request verbatim, the rest omitted.

    Directives and the current user message are protected; the window is the
    runtime mode's; older user messages compete for the budget only when the
    policy says so.

    Args:
        ctx: the pass (its boundary names the runtime kind, whose window applies).
        candidates: the records up to the epoch's boundary, with their lineage.

    Returns:
        One item per kept message, carrying the message as the reader sees it.
    """
    policy, boundary, participant, viewer, ledger = ctx.policy, ctx.boundary, ctx.participant, ctx.viewer, ctx.ledger
    visible: list[MessageRecord] = []
    for message in by_seq(candidates.messages):
        ref = f"message:{message.id}"
        # What the user typed is user data; a model's message is as strict as what its run was shown
        # (the store raises it), so another participant on a stricter route does not read it.
        denial = admit(message, message.privacy, viewer)
        if denial:
            kind = {OmissionReason.OUTSIDE_LINEAGE: "lineage", OmissionReason.PRIVACY_ROUTE: "privacy"}
            ledger.deny(kind.get(denial.reason, "visibility"), ref, denial)
            continue
        if not message.content.strip():
            ledger.decide(
                "transcript", ref, DecisionOutcome.OMITTED,
                "tool-call-only message; its calls are represented by tool state",
                OmissionReason.RESOLVED_ELSEWHERE,
            )
            continue
        visible.append(message)

    user_seqs = [m.seq for m in visible if m.role is MessageRole.USER]
    last_user = max(user_seqs, default=None)
    opening = min(user_seqs, default=None) if policy.keep_opening_request else None
    fork_point = None
    steps = candidates.lineage.steps
    if policy.keep_fork_point and len(steps) > 1 and steps[-2].until_seq is not None:
        fork_point = max((m.seq for m in visible if m.seq <= steps[-2].until_seq), default=None)
    window = policy.window_for(boundary.runtime_kind)
    window_start = len(visible) - window
    items: list[Item] = []
    for index, message in enumerate(visible):
        ref = f"message:{message.id}"
        chat = chat_message(message, participant, policy.max_message_chars)
        if message.is_directive:
            items.append(Item(ref, "transcript", RecordClass.POLICY, True, 0, message.seq, message=chat))
        elif message.seq == last_user:
            items.append(Item(ref, "transcript", RecordClass.CONVERSATIONAL, True, 0, message.seq, message=chat))
        elif index >= window_start:
            items.append(Item(ref, "transcript", RecordClass.CONVERSATIONAL, False, 0, message.seq, message=chat))
        elif message.seq in (opening, fork_point):
            items.append(Item(ref, "transcript", RecordClass.PLANNING, False, 0, message.seq, message=chat))
        elif message.role is MessageRole.USER and policy.keep_older_user_messages:
            items.append(Item(ref, "transcript", RecordClass.CONVERSATIONAL, False, 1, message.seq, message=chat))
        else:
            ledger.decide("transcript", ref, DecisionOutcome.OMITTED,
                          f"older than the {window}-message window", OmissionReason.OUTSIDE_WINDOW)
    return items


def chat_message(message: MessageRecord, participant: ParticipantRecord, max_chars: int) -> ChatMessage:
    """A transcript message as this participant should read it.

    Only the participant's own words read as assistant turns. A directive, a
    labelled user, another participant and a mid-conversation system message
    read as labelled user turns: providers take system text only before the
    conversation, and another model's answer is not the reader's own. What a user wrote reads whole: a
    task statement cut at a limit loses the code it quotes and the instructions at its end.
    """
    content = message.content
    if len(content) > max_chars and message.role is not MessageRole.USER:  # a user's message is never cut
        content = content[:max_chars] + f"\n[message cut at {max_chars} of {len(message.content)} chars]"
    label = message.speaker_label
    if message.is_directive:
        return ChatMessage(role=MessageRole.USER, content=f"{label or 'Moderator'}{DIRECTIVE_SEPARATOR}{content}")
    if message.role is MessageRole.ASSISTANT and message.author_participant_id != participant.id:
        # Another participant spoke: keep who said it, and do not present it as our own words.
        return ChatMessage(role=MessageRole.USER, content=f"{label or 'Assistant'}{SPEAKER_SEPARATOR}{content}")
    if message.role is MessageRole.SYSTEM:
        return ChatMessage(role=MessageRole.USER, content=f"{label or 'System'}{SPEAKER_SEPARATOR}{content}")
    if label and message.role is MessageRole.USER:
        return ChatMessage(role=MessageRole.USER, content=f"{label}{SPEAKER_SEPARATOR}{content}")
    return ChatMessage(role=message.role, content=content)
