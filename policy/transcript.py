"""The transcript: stage 6, which lineage messages a participant reads verbatim.

Moderator directives and the current user message are protected; the
runtime mode's window of recent messages, the opening request and the
message a forked branch forked from compete for the budget as their class
says. Older messages are not read verbatim, but never vanish in silence: they
are carried as one summary record (:func:`summary_item`) that gives their
span, a line per message with the id ``recall`` serves it by, and how many were
not listed. Messages are recast for the reader: another participant's answer
reads as a labelled user line, never as the reader's own words.
"""

from __future__ import annotations

from policy.enums import DecisionOutcome, MessageRole, OmissionReason, RecordClass
from policy.gates import admit
from policy.lines import BULLET, CLIPPED, RefKind, cite, inert, inert_json
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
    outside: list[MessageRecord] = []
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
            outside.append(message)
    # A tool step's narration is not summarised: its calls are in the tool state.
    older = [m for m in outside if not (m.role is MessageRole.ASSISTANT and m.tool_calls)]
    if not policy.transcript_summary_chars or len(older) < policy.transcript_summary_after:
        older = []
    carried = {m.id for m in older}
    for message in outside:
        note = " (counted in the summary of earlier messages)" if message.id in carried else ""
        ledger.decide("transcript", f"message:{message.id}", DecisionOutcome.OMITTED,
                      f"older than the {window}-message window{note}", OmissionReason.OUTSIDE_WINDOW)
    summary = summary_item(ctx, older)
    if summary is not None:
        items.append(summary)
    return items


SUMMARY_LINE_CHARS = 160
"""A message's line in the summary of earlier messages shows at most this many characters of its text."""


def summary_item(ctx: SelectionContext, older: list[MessageRecord]) -> Item | None:
    """The messages that fell out of the window, as one protected summary record (``None``: none, or off).

    The record names the span (first and last ``seq``) and counts every message; it lists the newest
    messages first, each by its ``msg:`` id and speaker, a user's with the start of its first line (quoted
    as inert JSON: a message may quote tool output or forge structure), an answer with its size only, until ``transcript_summary_chars`` is spent, and says how many it
    did not list. ``older`` holds no tool step's narration (an assistant message that called tools): its
    calls are in the tool state. ``recall`` serves any message whole by its id.
    """
    limit = ctx.policy.transcript_summary_chars
    if not older or limit <= 0:
        return None
    lines: list[str] = []
    spent = 0
    for message in reversed(older):
        line = _summary_line(message, ctx)
        if spent + len(line) > limit:
            break
        lines.append(line)
        spent += len(line)
    lines.reverse()
    first, last = older[0], older[-1]
    unlisted = len(older) - len(lines)
    span = f"seq {first.seq}" if first.seq == last.seq else f"seq {first.seq}-{last.seq}"
    header = f"{len(older)} message(s), {span}" + (f"; {unlisted} not listed" if unlisted else "")
    text = header + "".join("\n" + BULLET + line for line in lines)
    ref = f"transcript:{first.id}..{last.id}"
    ctx.ledger.decide("transcript", ref, DecisionOutcome.INCLUDED,
                      f"summary of {len(older)} message(s) older than the window ({len(lines)} listed)")
    return Item(ref, "earlier", RecordClass.PLANNING, True, 0, last.seq, text)


def _summary_line(message: MessageRecord, ctx: SelectionContext) -> str:
    """``[msg:…] speaker: "first line"`` for the user's words; a model's answer by its id and size only.

    A user's message is the thread (what was asked); an answer, the viewer's own or another
    participant's, restates what tools returned then and may have been superseded since, so its text is
    not carried forward (``recall`` serves it, the gates permitting).
    """
    cited = cite(RefKind.MESSAGE, ctx.short(message.id))
    if message.role is not MessageRole.USER or message.author_participant_id is not None:
        speaker = "you" if message.author_participant_id == ctx.participant.id else (
            message.speaker_label or message.role.value)
        return f"{cited} {inert(speaker)}: ({len(message.content)} chars, not shown)"
    first_line = " ".join(next((line for line in message.content.splitlines() if line.strip()), "").split())
    if len(first_line) > SUMMARY_LINE_CHARS or first_line != " ".join(message.content.split()):
        first_line = first_line[:SUMMARY_LINE_CHARS - 1] + CLIPPED
    # Quoted as JSON, like arguments: the text is data on its line, whatever it says.
    return f"{cited} {inert(message.speaker_label or 'user')}: {inert_json(first_line)}"


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
