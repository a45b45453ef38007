"""Render and record: the second pure pass, after README stages 1-9 have selected.

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
from collections.abc import Mapping
from dataclasses import dataclass

from policy.enums import MessageRole
from policy.errors import DerivationError
from policy.legacy import legacy_message_count, legacy_token_count
from policy.lines import (
    SECTION_TITLES,
    ShortIds,
    evidence_line,
    first_read_line,
    section,
    unavailable_evidence_line,
)
from policy.records import (
    ChatMessage,
    ContextAssemblyRecord,
    PolicyDecisionRecord,
    RehydrationItem,
    canonical_json,
)
from policy.rehydration import bounded, describe, slice_payload
from policy.selection import Item, Selection
from policy.tokens import TokenCounter, count_messages

ASSEMBLER_VERSION = "dossier-assembler/1"
"""Recorded on every ContextAssemblyRecord; bump it when the same inputs would assemble differently."""


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
) -> AssemblyResult:
    """Second pure pass: serialise the selection into provider messages.

    Args:
        selection: the output of :func:`policy.assembler.select_context`.
        raw_payloads: raw bytes for each planned rehydration, by artifact id.
        counter: the injected token counter.
        unavailable: planned artifacts whose bytes could not be read, with the
            reason (missing object, failed integrity check); the model is told
            the evidence is unavailable instead of being given anything else.

    Returns:
        Messages, the ContextAssembly record and every policy decision.

    Raises:
        DerivationError: a planned payload is missing or its locator does not fit.
    """
    short = selection.short_ids
    unavailable = unavailable or {}
    first_reads = {
        f"memory:{planned.memory_id}": planned for planned in selection.rehydration
        if planned.memory_id is not None and planned.artifact_id not in unavailable
    }
    titles = {f"memory:{memory.id}": memory.title for memory in selection.candidates.tool_memories}
    sections: dict[str, list[str]] = {name: [] for name in SECTION_TITLES}
    transcript: list[Item] = []
    for item in selection.items:
        if item.message is not None:
            transcript.append(item)
        elif item.ref in first_reads:
            sections[item.section].append(_first_read(first_reads[item.ref], titles[item.ref], raw_payloads, short))
        else:
            sections[item.section].append(item.text)
    for planned in selection.rehydration:
        if planned.memory_id is not None:
            continue  # an unread result: rendered whole in its memory's place, or its summary stays
        if planned.artifact_id in unavailable:
            sections["evidence"].append(
                unavailable_evidence_line(planned.artifact_id, unavailable[planned.artifact_id], short))
            continue
        if planned.artifact_id not in raw_payloads:
            raise DerivationError(f"rehydration planned for artifact {planned.artifact_id} but no bytes given")
        text = bounded(slice_payload(raw_payloads[planned.artifact_id], planned.locator), planned.max_bytes)
        sections["evidence"].append(evidence_line(planned.artifact_id, describe(planned.locator), text, short))
    sections["evidence"] += selection.raw_denials

    blocks = [selection.participant.system_prompt] if selection.participant.system_prompt else []
    for name, title in SECTION_TITLES.items():
        if sections[name]:
            blocks.append(section(title, sections[name]))
    messages: list[ChatMessage] = []
    if blocks:
        messages.append(ChatMessage(role=MessageRole.SYSTEM, content="\n\n".join(blocks)))
    transcript.sort(key=lambda item: (item.seq, item.ref))
    messages += [item.message for item in transcript if item.message is not None]

    candidates = selection.candidates
    digest = hashlib.sha256(canonical_json([m.to_openai() for m in messages]).encode()).hexdigest()
    record = ContextAssemblyRecord(
        policy_version=selection.policy.version_tag,
        assembler_version=ASSEMBLER_VERSION,
        snapshot_seq=candidates.snapshot_seq,
        legacy_message_count=legacy_message_count(candidates, selection.participant),
        assembled_message_count=len(messages),
        legacy_tokens=legacy_token_count(candidates, selection.participant, counter),
        assembled_tokens=count_messages(messages, counter),
        token_budget=selection.token_budget,
        selected_refs=tuple(sorted(item.ref for item in selection.items)),
        rehydrated_refs=tuple(
            f"artifact:{p.artifact_id}#{describe(p.locator).replace(' ', '=')}"
            for p in selection.rehydration
            if p.artifact_id not in unavailable
        ),
        omitted_counts=selection.omitted,
        content_sha256=digest,
    )
    return AssemblyResult(messages=tuple(messages), record=record, decisions=selection.decisions)


def _first_read(planned: RehydrationItem, title: str, raw_payloads: Mapping[str, bytes], short: ShortIds) -> str:
    """A memory whose unread result is shown whole: its citation and title, then the bytes."""
    if planned.artifact_id not in raw_payloads:
        raise DerivationError(f"first read planned for artifact {planned.artifact_id} but no bytes given")
    text = bounded(slice_payload(raw_payloads[planned.artifact_id], None), planned.max_bytes)
    return first_read_line(planned.memory_id or "", title, planned.artifact_id, text, short)
