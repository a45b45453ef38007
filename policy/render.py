"""Render and record: the second pure pass, after stages 1-9 have selected.

:func:`render_context` turns a :class:`~policy.selection.Selection` and the
raw bytes its plan asked for into provider messages: one system message (the
participant's prompt, then the runtime sections in :data:`SECTION_TITLES`
order, with planned evidence cut to its exact slice) followed by the kept
transcript in lineage order. It also builds the
:class:`~policy.records.ContextAssemblyRecord` that audit reads later: what
was selected, rehydrated and omitted, and a digest of the exact messages.
Line shapes are :mod:`policy.lines`'.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from policy.enums import MessageRole
from policy.errors import DerivationError
from policy.legacy import legacy_message_count, legacy_token_count
from policy.epochs import item_key
from policy.lines import (
    SECTION_TITLES,
    evidence_line,
    section,
    unavailable_evidence_line,
)
from policy.native import RenderedReads, render_events
from policy.records import (
    CandidateSet,
    ChatMessage,
    ContextAssemblyRecord,
    ParticipantRecord,
    PolicyDecisionRecord,
    RehydrationItem,
    canonical_json,
)
from policy.rehydration import bounded, describe, slice_payload, unavailable_raw_decisions
from policy.selection import Item, Selection
from policy.skills import catalog_message
from policy.tokens import TokenCounter, count_messages
from policy.validate import require_valid

ASSEMBLER_VERSION = "dossier-assembler/4"
"""Recorded on every ContextAssemblyRecord; bump it when the same inputs would assemble differently (4: tool
summaries quoted, skill instructions fenced, results a newer one replaced on the lineage shown as superseded,
settled failures no longer open)."""


@dataclass(frozen=True)
class AssemblyResult:
    """Provider-ready messages plus the audit record of how they were chosen."""

    messages: tuple[ChatMessage, ...]
    record: ContextAssemblyRecord
    decisions: tuple[PolicyDecisionRecord, ...]

    def to_openai(self) -> list[dict]:
        """The messages in OpenAI chat-completions form."""
        return [message.to_openai() for message in self.messages]


def render_context(
    selection: Selection,
    raw_payloads: Mapping[str, bytes],
    counter: TokenCounter,
    unavailable: Mapping[str, str] | None = None,
    rendered: RenderedReads | None = None,
) -> AssemblyResult:
    """Second pure pass: serialise the selection into provider messages.

    The prefix first: the participant's prompt as its own system message (it
    never changes, so its cache entry outlives every epoch), the skill catalog
    as the next one when the participant has skills, the runtime sections
    after it, then the kept transcript in lineage order. Then
    the epoch's appended events (:func:`policy.native.render_events`). The
    list is checked against both providers' rules before it is returned.

    Args:
        selection: the output of :func:`policy.assembler.select_context`.
        raw_payloads: raw bytes for each planned rehydration, by artifact id.
        counter: the injected token counter.
        unavailable: planned artifacts whose bytes could not be read, with the
            reason (missing object, failed integrity check); the model is told
            the evidence is unavailable instead of being given anything else,
            and each one's decision says it was not shown whole, and why
            (:func:`policy.rehydration.unavailable_raw_decisions`).
        rendered: first-read texts the caller keeps across calls (:data:`policy.native.RenderedReads`): an
            epoch's large results are compacted and viewed once, not on every call.

    Returns:
        Messages, the ContextAssembly record and every policy decision.

    Raises:
        DerivationError: a planned payload is missing or its locator does not fit.
        InvalidContextError: the messages break a rule OpenAI's or Anthropic's API enforces.
    """
    short = selection.short_ids
    unavailable = unavailable or {}
    sections = runtime_sections(selection)
    for planned in selection.rehydration:
        if planned.artifact_id not in unavailable and planned.artifact_id not in raw_payloads:
            raise DerivationError(f"rehydration planned for artifact {planned.artifact_id} but no bytes given")
        if planned.tool_call_id is not None:
            continue  # an appended result shown whole: its tool message carries it
        if planned.artifact_id in unavailable:
            sections["evidence"].append(
                unavailable_evidence_line(planned.artifact_id, unavailable[planned.artifact_id], short))
            continue
        text = bounded(slice_payload(raw_payloads[planned.artifact_id], planned.locator), planned.max_bytes)
        sections["evidence"].append(evidence_line(planned.artifact_id, describe(planned.locator), text, short))
    sections["evidence"] += selection.raw_denials

    messages: list[ChatMessage] = []
    if selection.participant.system_prompt:
        messages.append(ChatMessage(role=MessageRole.SYSTEM, content=selection.participant.system_prompt))
    catalog = catalog_message(selection.boundary.skill_catalog)
    if catalog is not None:
        messages.append(catalog)
    blocks = [section(title, sections[name]) for name, title in SECTION_TITLES.items() if sections[name]]
    if blocks:
        messages.append(ChatMessage(role=MessageRole.SYSTEM, content="\n\n".join(blocks)))
    transcript = sorted((item for item in selection.items if item.message is not None),
                        key=lambda item: (item.seq, item.ref))
    messages += [item.message for item in transcript if item.message is not None]
    appended = render_events(selection.events, raw_payloads, unavailable, compact=selection.policy.native_compact,
                             rendered=rendered)
    messages = _conversation_opens_with_user(messages, appended)
    prefix_end = len(messages) - 1
    messages += appended
    messages = [_without_nul(message) for message in messages]
    require_valid([m.to_openai() for m in messages])

    candidates = selection.candidates
    digest = hashlib.sha256(canonical_json([m.to_openai() for m in messages]).encode()).hexdigest()
    breakpoints = sorted({index for index in (0 if selection.participant.system_prompt else -1, prefix_end,
                                               len(messages) - 1) if index >= 0})
    epoch = selection.epoch.model_copy(update={
        "prefix_messages": prefix_end + 1,
        "appended_tokens": count_messages(appended, counter),
        "cache_breakpoints": tuple(breakpoints),
    })
    record = ContextAssemblyRecord(
        policy_version=selection.policy.version_tag,
        assembler_version=ASSEMBLER_VERSION,
        snapshot_seq=candidates.snapshot_seq,
        legacy_message_count=legacy_message_count(candidates, selection.participant),
        assembled_message_count=len(messages),
        legacy_tokens=legacy_token_count(candidates, selection.participant, counter),
        assembled_tokens=count_messages(messages, counter),
        token_budget=selection.token_budget,
        selected_refs=tuple(sorted({item.ref for item in selection.items}
                                   | {event.ref for event in selection.events.events})),
        rehydrated_refs=tuple(
            f"artifact:{p.artifact_id}#{'native' if p.tool_call_id else describe(p.locator).replace(' ', '=')}"
            for p in selection.rehydration
            if p.artifact_id not in unavailable
        ),
        omitted_counts=selection.omitted,
        content_sha256=digest,
        epoch=epoch,
    )
    decisions = selection.decisions
    if unavailable:
        # Selection logged planned reads as rehydrated before any byte was read: say what was shown instead.
        decisions, added = unavailable_raw_decisions(decisions, selection.rehydration, unavailable)
        omitted = dict(sorted((Counter(record.omitted_counts) + added).items()))
        record = record.model_copy(update={"omitted_counts": omitted})
    return AssemblyResult(messages=tuple(messages), record=record, decisions=decisions)


def _without_nul(message: ChatMessage) -> ChatMessage:
    """``message`` with U+0000 in its text shown as U+FFFD.

    Raw evidence is shown byte for byte, but no provider API takes U+0000 in a
    message and Postgres cannot store it in the recorded assembly; the exact
    bytes stay in the artifact. Tool-call arguments need nothing: their JSON
    form escapes every control character.
    """
    if message.content is None or "\x00" not in message.content:
        return message
    return message.model_copy(update={"content": message.content.replace("\x00", "\ufffd")})


OPENING_NOTE = "Continue from the context above."
"""The user turn put first when a conversation would otherwise open with the assistant (providers refuse that)."""


def _conversation_opens_with_user(prefix: list[ChatMessage], appended: list[ChatMessage]) -> list[ChatMessage]:
    """The prefix, with a user turn first in the conversation if it would open with the assistant."""
    first = next((m for m in (*prefix, *appended) if m.role is not MessageRole.SYSTEM), None)
    if first is None or first.role is MessageRole.USER:
        return prefix
    leading = sum(1 for m in prefix if m.role is MessageRole.SYSTEM)
    return [*prefix[:leading], ChatMessage(role=MessageRole.USER, content=OPENING_NOTE), *prefix[leading:]]


def runtime_sections(selection: Selection) -> dict[str, list[str]]:
    """The runtime-context lines of the kept items, by section, in the order they render."""
    sections: dict[str, list[str]] = {name: [] for name in SECTION_TITLES}
    for item in selection.items:
        if item.message is None:
            sections[item.section].append(item.text)
    return sections


def prefix_parts(
    participant: ParticipantRecord,
    kept: Sequence[Item],
    rehydration: Sequence[RehydrationItem],
    raw_denials: Sequence[str],
    candidates: CandidateSet,
    catalog: str = "",
) -> list[str]:
    """What the prefix is rendered from, part by part (:func:`policy.epochs.item_key`), in render order.

    Two prefixes with the same parts render to the same messages: lines and
    messages are keyed by their text, evidence by artifact, slice, cap and the
    bytes' sha256 (read back hash-verified); the skill catalog by its text.
    """
    parts = [item_key("system", participant.system_prompt)] if participant.system_prompt else []
    if catalog:
        parts.append(item_key("skills", catalog))
    by_section: dict[str, list[Item]] = {name: [] for name in SECTION_TITLES}
    for item in kept:
        if item.message is None:
            by_section[item.section].append(item)
    for name in SECTION_TITLES:
        parts += [item_key(item.ref, item.text) for item in by_section[name]]
    sha = {artifact.id: artifact.sha256 for artifact in candidates.artifacts}
    parts += [item_key(f"artifact:{p.artifact_id}", f"{describe(p.locator)}#{p.max_bytes}#{sha.get(p.artifact_id)}")
              for p in rehydration if p.tool_call_id is None]
    parts += [item_key("withheld", line) for line in raw_denials]
    for item in sorted((i for i in kept if i.message is not None), key=lambda i: (i.seq, i.ref)):
        message = item.message
        parts.append(item_key(item.ref, f"{message.role.value}\n{message.content}" if message else ""))
    return parts
