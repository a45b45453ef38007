"""The context assembler: policy + generation boundary + candidates -> provider messages.

Two pure passes, with the caller's I/O between them::

    selection = select_context(policy, boundary, candidates, counter)
    raw = {item.artifact_id: <bytes from the artifact store> for item in selection.rehydration}
    result = render_context(selection, raw, counter)

``select_context`` admits candidates (lineage, visibility, promotion, privacy),
applies freshness and supersession, protects unresolved state, spends the
token budget in priority order, and only then plans raw rehydration.
``render_context`` serialises the selection to OpenAI-style messages and
builds the :class:`ContextAssemblyRecord`. Neither reads a clock, draws a
random number or depends on dict or set order: the same inputs give
byte-identical output (``content_sha256`` proves it).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from policy.enums import (
    CLASS_PRIORITY,
    UNRESOLVED_STATUSES,
    DecisionOutcome,
    MessageRole,
    OmissionReason,
    PrivacyClass,
    RecordClass,
    ToolCallStatus,
)
from policy.derive import FILE_CONTENT_TYPE
from policy.errors import BoundaryMismatchError, DerivationError, UnknownParticipantError
from policy.gates import Denial, Viewer, admit, check_privacy, is_stale, stale_at
from policy.legacy import legacy_message_count, legacy_token_count
from policy.policy import FAIL_CLOSED_ROUTE, ContextPolicy
from policy.records import (
    CandidateSet,
    ChatMessage,
    ContextAssemblyRecord,
    GenerationBoundary,
    MessageRecord,
    ParticipantRecord,
    PolicyDecisionRecord,
    RehydrationItem,
    ToolMemoryRecord,
    canonical_json,
)
from policy.rehydrate import bounded, describe, slice_payload
from policy.render import (
    FIRST_READ_LABEL,
    fenced,
    SECTION_TITLES,
    ShortIds,
    checkpoint_line,
    memory_line,
    receipt_line,
    skill_line,
    stale_marker_line,
    tool_call_line,
    user_memory_line,
)
from policy.tokens import TokenCounter, count_message, count_messages

ASSEMBLER_VERSION = "dossier-assembler/1"


@dataclass(frozen=True)
class Item:
    """One admitted candidate competing for the budget."""

    ref: str
    """``<type>:<full id>`` of the graph record."""
    section: str
    """A key of :data:`SECTION_TITLES`, or ``"transcript"``."""
    record_class: RecordClass
    protected: bool
    tier: int
    """Sub-priority inside a class (0 first)."""
    seq: int
    text: str = ""
    message: ChatMessage | None = None

    def sort_key(self) -> tuple:
        """Keep order: protected first, then class priority, tier, newest, id."""
        return (not self.protected, CLASS_PRIORITY[self.record_class], self.tier, -self.seq, self.ref)


@dataclass
class _Ledger:
    """Collects decisions and omission counts in the order they are taken."""

    policy_version: str
    decisions: list[PolicyDecisionRecord] = field(default_factory=list)
    omitted: Counter = field(default_factory=Counter)

    def decide(
        self,
        kind: str,
        ref: str,
        outcome: DecisionOutcome,
        reason: str,
        omission: OmissionReason | None = None,
    ) -> None:
        self.decisions.append(
            PolicyDecisionRecord(
                kind=kind,
                subject_ref=ref,
                outcome=outcome,
                reason=reason,
                omission=omission,
                policy_version=self.policy_version,
            )
        )
        if omission is not None:
            self.omitted[omission.value] += 1

    def deny(self, kind: str, ref: str, denial: Denial) -> None:
        self.decide(kind, ref, DecisionOutcome.OMITTED, denial.detail, denial.reason)


@dataclass(frozen=True)
class Selection:
    """The outcome of the selection pass: what goes in, and what raw to fetch."""

    policy: ContextPolicy
    boundary: GenerationBoundary
    candidates: CandidateSet
    participant: ParticipantRecord
    items: tuple[Item, ...]
    rehydration: tuple[RehydrationItem, ...]
    raw_denials: tuple[str, ...]
    """Lines explaining raw evidence withheld (privacy), rendered for the model."""
    decisions: tuple[PolicyDecisionRecord, ...]
    omitted: dict[str, int]
    token_budget: int
    short_ids: ShortIds


@dataclass(frozen=True)
class AssemblyResult:
    """Provider-ready messages plus the audit record of how they were chosen."""

    messages: tuple[ChatMessage, ...]
    record: ContextAssemblyRecord
    decisions: tuple[PolicyDecisionRecord, ...]

    def to_openai(self) -> list[dict]:
        """The messages in OpenAI chat-completions form."""
        return [message.to_openai() for message in self.messages]


# --------------------------------------------------------------------------- selection


def select_context(
    policy: ContextPolicy,
    boundary: GenerationBoundary,
    candidates: CandidateSet,
    counter: TokenCounter,
) -> Selection:
    """First pass: decide every candidate and plan raw rehydration.

    Args:
        policy: the immutable rule set.
        boundary: who generates, where, through which route, with what budget.
        candidates: the bounded graph slice loaded for this boundary.
        counter: the injected token counter.

    Returns:
        The :class:`Selection`; pass it to :func:`render_context`.

    Raises:
        UnknownParticipantError: the boundary's participant is not a candidate.
        BoundaryMismatchError: the candidates belong to another branch.
    """
    if candidates.lineage.active_branch_id != boundary.branch_id:
        raise BoundaryMismatchError(
            f"candidates were loaded for branch {candidates.lineage.active_branch_id}, boundary is {boundary.branch_id}"
        )
    participant = _participant(candidates, boundary.participant_id)
    ledger = _Ledger(policy.version_tag)
    route = policy.route(boundary.provider_route)
    if route is None:
        route = FAIL_CLOSED_ROUTE
        ledger.decide(
            "route",
            f"route:{boundary.provider_route}",
            DecisionOutcome.DENIED,
            "unknown provider route: failing closed to public records only",
        )
    viewer = Viewer(participant.id, candidates.lineage, route)
    short = short_ids_for(candidates)

    items: list[Item] = []
    covered_calls, memory_items = _memories(policy, boundary, candidates, viewer, short, ledger)
    items += memory_items
    items += _tool_calls(policy, candidates, viewer, short, ledger, covered_calls)
    items = _drop_memories_of_open_calls(items, candidates, ledger)
    items += _planning(candidates, viewer, short, ledger)
    items += _user_memories(candidates, viewer, ledger)
    items += _transcript(policy, boundary, candidates, participant, viewer, ledger)
    _count_unrequested_raw(candidates, viewer, ledger, boundary)

    # 0 is a budget (protected state only), not "unset".
    budget = policy.default_token_budget if boundary.token_budget is None else boundary.token_budget
    kept, spent = _spend_budget(policy, items, participant, budget, counter, ledger)
    rehydration, raw_denials = _plan_rehydration(policy, boundary, candidates, viewer, kept, short, ledger)
    rehydration += _plan_unread(policy, candidates, viewer, kept, budget - spent, counter, ledger, rehydration)
    return Selection(
        policy=policy,
        boundary=boundary,
        candidates=candidates,
        participant=participant,
        items=tuple(kept),
        rehydration=tuple(rehydration),
        raw_denials=tuple(raw_denials),
        decisions=tuple(ledger.decisions),
        omitted=dict(sorted(ledger.omitted.items())),
        token_budget=budget,
        short_ids=short,
    )


def _participant(candidates: CandidateSet, participant_id: str) -> ParticipantRecord:
    for participant in candidates.participants:
        if participant.id == participant_id:
            return participant
    raise UnknownParticipantError(f"participant {participant_id} is not part of this conversation")


def short_ids_for(candidates: CandidateSet) -> ShortIds:
    """The short ids an assembly over ``candidates`` renders (for audit and tests)."""
    return ShortIds(_all_ids(candidates))


def _all_ids(candidates: CandidateSet) -> list[str]:
    ids: list[str] = []
    for group in (
        candidates.tool_calls,
        candidates.artifacts,
        candidates.tool_memories,
        candidates.skill_states,
        candidates.checkpoints,
    ):
        ids += [record.id for record in group]
    return ids


def _by_seq(records):
    return sorted(records, key=lambda record: (record.seq, record.id))


def _memories(
    policy: ContextPolicy,
    boundary: GenerationBoundary,
    candidates: CandidateSet,
    viewer: Viewer,
    short: ShortIds,
    ledger: _Ledger,
) -> tuple[set[str], list[Item]]:
    """Admit tool memories; returns the tool calls they cover and their items."""
    call_of_artifact = {artifact.id: artifact.tool_call_id for artifact in candidates.artifacts}
    passed: list[ToolMemoryRecord] = []
    for memory in _by_seq(candidates.tool_memories):
        ref = f"memory:{memory.id}"
        denial = admit(memory, memory.privacy, viewer)
        if denial:
            ledger.deny("visibility" if denial.reason is not OmissionReason.PRIVACY_ROUTE else "privacy", ref, denial)
            continue
        passed.append(memory)

    # A replacement this viewer cannot see (a sibling branch's, another
    # participant's private memory, one outside the candidates) replaces nothing.
    passed_ids = {memory.id for memory in passed}
    covered: set[str] = set()
    admitted: list[ToolMemoryRecord] = []
    for memory in passed:
        if memory.superseded_by in passed_ids:
            # Its call is represented too: by the replacement, not by a receipt line.
            covered.update(call_of_artifact[a] for a in memory.source_artifact_ids if a in call_of_artifact)
            ledger.decide(
                "supersession", f"memory:{memory.id}", DecisionOutcome.OMITTED,
                f"superseded by memory {memory.superseded_by}", OmissionReason.SUPERSEDED,
            )
            continue
        admitted.append(memory)

    admitted_ids = {memory.id for memory in admitted}
    items: list[Item] = []
    for memory in admitted:
        ref = f"memory:{memory.id}"
        for artifact_id in memory.source_artifact_ids:
            if artifact_id in call_of_artifact:
                covered.add(call_of_artifact[artifact_id])
        if is_stale(memory, policy, boundary.now):
            if policy.stale_handling == "omit":
                ledger.decide("freshness", ref, DecisionOutcome.OMITTED, "stale", OmissionReason.STALE)
                continue
            text = stale_marker_line(memory, short, stale_at(memory, policy))
            items.append(Item(ref, "stale", RecordClass.EPISTEMIC, False, 2, memory.seq, text))
            continue
        conflicts = [other for other in memory.conflicts_with if other in admitted_ids]
        text = memory_line(memory, short, conflicts)
        items.append(Item(ref, "memory", RecordClass.EPISTEMIC, False, 0 if conflicts else 1, memory.seq, text))
    return covered, items


def _drop_memories_of_open_calls(items: list[Item], candidates: CandidateSet, ledger: _Ledger) -> list[Item]:
    """A failed call shown as open recovery state needs no second line for its error memory."""
    open_calls = {item.ref.removeprefix("tool_call:") for item in items if item.section == "recovery"}
    call_of_artifact = {artifact.id: artifact.tool_call_id for artifact in candidates.artifacts}
    calls_of_memory = {
        f"memory:{memory.id}": {call_of_artifact.get(a) for a in memory.source_artifact_ids}
        for memory in candidates.tool_memories
    }
    kept: list[Item] = []
    for item in items:
        calls = calls_of_memory.get(item.ref, set())
        if item.section == "memory" and calls and calls <= open_calls:
            ledger.decide("tool_memory", item.ref, DecisionOutcome.OMITTED,
                          "represented by its open tool call", OmissionReason.RESOLVED_ELSEWHERE)
            continue
        kept.append(item)
    return kept


def _tool_calls(
    policy: ContextPolicy,
    candidates: CandidateSet,
    viewer: Viewer,
    short: ShortIds,
    ledger: _Ledger,
    covered: set[str],
) -> list[Item]:
    """Unresolved and failed calls are protected recovery state for their owner."""
    items: list[Item] = []
    for call in _by_seq(candidates.tool_calls):
        ref = f"tool_call:{call.id}"
        denial = admit(call, call.privacy, viewer)
        if denial:
            ledger.deny("visibility", ref, denial)
            continue
        unresolved = call.status in UNRESOLVED_STATUSES
        if unresolved or (call.retry_critical and call.status is not ToolCallStatus.SUCCEEDED):
            protected = call.participant_id == viewer.participant_id
            text = tool_call_line(call, short, policy.max_error_chars)
            items.append(Item(ref, "recovery", RecordClass.RECOVERY, protected, 0, call.seq, text))
        elif call.id in covered:
            ledger.decide(
                "tool_call", ref, DecisionOutcome.OMITTED,
                "succeeded; represented by its tool memory", OmissionReason.RESOLVED_ELSEWHERE,
            )
        else:
            items.append(Item(ref, "receipt", RecordClass.OPERATIONAL, False, 0, call.seq, receipt_line(call, short)))
    return items


def _planning(candidates: CandidateSet, viewer: Viewer, short: ShortIds, ledger: _Ledger) -> list[Item]:
    """Latest checkpoint per kind (protected) and latest state per active skill."""
    items: list[Item] = []
    latest_checkpoint: dict[str, str] = {}
    for checkpoint in _by_seq(candidates.checkpoints):
        if admit(checkpoint, checkpoint.privacy, viewer) is None:
            latest_checkpoint[checkpoint.kind] = checkpoint.id
    for checkpoint in _by_seq(candidates.checkpoints):
        ref = f"checkpoint:{checkpoint.id}"
        denial = admit(checkpoint, checkpoint.privacy, viewer)
        if denial:
            ledger.deny("visibility", ref, denial)
        elif latest_checkpoint.get(checkpoint.kind) != checkpoint.id:
            ledger.decide("checkpoint", ref, DecisionOutcome.OMITTED, "older checkpoint of the same kind",
                          OmissionReason.SUPERSEDED)
        else:
            text = checkpoint_line(checkpoint, short)
            items.append(Item(ref, "planning", RecordClass.PLANNING, True, 0, checkpoint.seq, text))

    latest_skill: dict[tuple[str, str], str] = {}
    for skill in _by_seq(candidates.skill_states):
        if admit(skill, skill.privacy, viewer) is None:
            latest_skill[(skill.participant_id, skill.skill)] = skill.id
    for skill in _by_seq(candidates.skill_states):
        ref = f"skill:{skill.id}"
        denial = admit(skill, skill.privacy, viewer)
        if denial:
            ledger.deny("visibility", ref, denial)
        elif latest_skill.get((skill.participant_id, skill.skill)) != skill.id or not skill.active:
            reason = "inactive skill" if skill.active is False else "older state of the same skill"
            ledger.decide("skill", ref, DecisionOutcome.OMITTED, reason, OmissionReason.SUPERSEDED)
        else:
            items.append(Item(ref, "planning", RecordClass.PLANNING, False, 1, skill.seq, skill_line(skill, short)))
    return items


def _user_memories(candidates: CandidateSet, viewer: Viewer, ledger: _Ledger) -> list[Item]:
    items: list[Item] = []
    for memory in sorted(candidates.user_memories, key=lambda m: (m.seq, m.id)):
        ref = f"user_memory:{memory.id}"
        if memory.participant_id not in (None, viewer.participant_id):
            ledger.decide("visibility", ref, DecisionOutcome.OMITTED, "scoped to another participant",
                          OmissionReason.NOT_VISIBLE)
            continue
        denial = check_privacy(memory.privacy, viewer)
        if denial:
            ledger.deny("privacy", ref, denial)
            continue
        items.append(Item(ref, "user", RecordClass.EPISTEMIC, False, 3, memory.seq, user_memory_line(memory)))
    return items


def _transcript(
    policy: ContextPolicy,
    boundary: GenerationBoundary,
    candidates: CandidateSet,
    participant: ParticipantRecord,
    viewer: Viewer,
    ledger: _Ledger,
) -> list[Item]:
    """Lineage messages: the window and the opening request verbatim, the rest omitted.

    Directives and the current user message are protected; the window is the
    runtime mode's; older user messages compete for the budget only when the
    policy says so.
    """
    visible: list[MessageRecord] = []
    for message in _by_seq(candidates.messages):
        ref = f"message:{message.id}"
        # What the user typed is theirs to send to the model they chose.
        denial = admit(message, PrivacyClass.USER, viewer)
        if denial:
            ledger.deny("lineage" if denial.reason is OmissionReason.OUTSIDE_LINEAGE else "visibility", ref, denial)
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
        chat = _chat_message(message, participant, policy.max_message_chars)
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


def _chat_message(message: MessageRecord, participant: ParticipantRecord, max_chars: int) -> ChatMessage:
    """A transcript message as this participant should read it."""
    content = message.content
    if len(content) > max_chars:
        content = content[:max_chars] + f"\n[message cut at {max_chars} of {len(message.content)} chars]"
    label = message.speaker_label
    if message.is_directive:
        return ChatMessage(role=MessageRole.SYSTEM, content=f"{label or 'Moderator'} directive: {content}")
    if message.role is MessageRole.ASSISTANT and message.author_participant_id != participant.id:
        # Another participant spoke: keep who said it, and do not present it as our own words.
        return ChatMessage(role=MessageRole.USER, content=f"{label or 'Assistant'}: {content}")
    if label and message.role is MessageRole.USER:
        return ChatMessage(role=MessageRole.USER, content=f"{label}: {content}")
    return ChatMessage(role=message.role, content=content)


def _count_unrequested_raw(
    candidates: CandidateSet, viewer: Viewer, ledger: _Ledger, boundary: GenerationBoundary
) -> None:
    """Raw payloads are never sent by default; count what stayed in the store."""
    requested = {request.artifact_id for request in boundary.evidence_requests}
    for artifact in _by_seq(candidates.artifacts):
        if artifact.id in requested:
            continue
        denial = admit(artifact, artifact.privacy, viewer)
        if denial:
            ledger.omitted[denial.reason.value] += 1
        else:
            ledger.omitted[OmissionReason.RAW_NOT_REQUESTED.value] += 1


# --------------------------------------------------------------------------- budget


def _spend_budget(
    policy: ContextPolicy,
    items: list[Item],
    participant: ParticipantRecord,
    budget: int,
    counter: TokenCounter,
    ledger: _Ledger,
) -> tuple[list[Item], int]:
    """Keep items in priority order while they fit; protected items always stay.

    Returns the kept items and the tokens they (and the system prompt) cost.
    """
    system_cost = count_message(ChatMessage(role=MessageRole.SYSTEM, content=participant.system_prompt), counter)
    spent = system_cost
    opened: set[str] = set()
    kept: list[Item] = []
    memories = 0
    for item in sorted(items, key=Item.sort_key):
        cost = _item_cost(item, counter, opened)
        over_cap = item.section == "memory" and memories >= policy.max_memories
        if item.protected or (spent + cost <= budget and not over_cap):
            kept.append(item)
            spent += cost
            opened.add(item.section)
            memories += item.section == "memory"
            outcome = DecisionOutcome.PROTECTED if item.protected else DecisionOutcome.INCLUDED
            if item.section == "stale":
                outcome = DecisionOutcome.MARKED_STALE
            reason = "protected state" if item.protected else f"{item.record_class.value}, fits budget"
            ledger.decide(item.section, item.ref, outcome, reason)
        else:
            why = "memory cap reached" if over_cap else f"would exceed {budget}-token budget"
            ledger.decide(item.section, item.ref, DecisionOutcome.OMITTED, why, OmissionReason.BUDGET)
    return kept, spent


def _item_cost(item: Item, counter: TokenCounter, opened: set[str]) -> int:
    if item.message is not None:
        return count_message(item.message, counter)
    header = 0 if item.section in opened else counter("\n" + SECTION_TITLES[item.section])
    return header + counter("\n- " + item.text)


# --------------------------------------------------------------------------- rehydration


def _plan_rehydration(
    policy: ContextPolicy,
    boundary: GenerationBoundary,
    candidates: CandidateSet,
    viewer: Viewer,
    kept: list[Item],
    short: ShortIds,
    ledger: _Ledger,
) -> tuple[list[RehydrationItem], list[str]]:
    """Second pass: raw evidence only for selected, allowed, requested artifacts."""
    artifacts = {artifact.id: artifact for artifact in candidates.artifacts}
    memories = {memory.id: memory for memory in candidates.tool_memories}
    selected_sources: dict[str, str] = {}
    for item in kept:
        kind, _, record_id = item.ref.partition(":")
        if kind == "memory":
            for artifact_id in memories[record_id].source_artifact_ids:
                selected_sources.setdefault(artifact_id, record_id)
    remaining = policy.rehydration_total_bytes
    plan: list[RehydrationItem] = []
    notes: list[str] = []
    for request in boundary.evidence_requests:
        ref = f"artifact:{request.artifact_id}"
        artifact = artifacts.get(request.artifact_id)
        if artifact is None:
            ledger.decide("rehydration", ref, DecisionOutcome.DENIED, "artifact not in this conversation's graph")
            continue
        denial = admit(artifact, artifact.privacy, viewer)
        if denial:
            ledger.deny("rehydration", ref, denial)
            continue
        if artifact.id not in selected_sources:
            ledger.decide("rehydration", ref, DecisionOutcome.OMITTED,
                          "no selected memory cites this artifact", OmissionReason.RAW_NOT_REQUESTED)
            continue
        if artifact.privacy not in viewer.route.raw_allowed:
            ledger.decide("rehydration", ref, DecisionOutcome.DENIED,
                          f"raw {artifact.privacy.value} payloads not allowed on route {viewer.route.name}",
                          OmissionReason.RAW_PRIVACY)
            memory = memories[selected_sources[artifact.id]]
            tools = ", ".join(memory.revalidate_with) or memory.source_tool
            notes.append(
                f"[a:{short(artifact.id)}] raw {artifact.privacy.value} body withheld on this route; "
                f"use [m:{short(memory.id)}] and re-run {tools} to verify"
            )
            continue
        size = min(policy.rehydration_item_bytes, remaining)
        if size <= 0:
            ledger.decide("rehydration", ref, DecisionOutcome.OMITTED,
                          "rehydration byte budget spent", OmissionReason.RAW_BYTE_BUDGET)
            continue
        estimate = artifact.result_bytes if request.locator is None else size
        remaining -= min(size, estimate)
        plan.append(RehydrationItem(artifact_id=artifact.id, locator=request.locator, max_bytes=size))
        ledger.decide("rehydration", ref, DecisionOutcome.REHYDRATED,
                      f"exact evidence requested ({describe(request.locator)}), up to {size} bytes")
    return plan, notes


def unread_artifact_ids(candidates: CandidateSet, participant_id: str) -> set[str]:
    """Results the participant has not read: those its latest model call asked for.

    The participant's newest assistant message on the lineage is its latest
    model call. When that call requested tools, their results arrived after
    the model last ran, so no context has shown them yet.
    """
    latest = None
    for message in candidates.messages:
        if (message.role is MessageRole.ASSISTANT and message.author_participant_id == participant_id
                and (latest is None or message.seq > latest.seq)):
            latest = message
    if latest is None or not latest.tool_calls or latest.model_run_id is None:
        return set()
    return {
        artifact.id for artifact in candidates.artifacts
        if artifact.model_run_id == latest.model_run_id and artifact.owner_participant_id == participant_id
        and artifact.seq > latest.seq
    }


_FENCE_TOKENS = 8
"""Tokens a fenced raw block adds beyond its payload (fences, header words)."""


def _plan_unread(
    policy: ContextPolicy,
    candidates: CandidateSet,
    viewer: Viewer,
    kept: list[Item],
    left: int,
    counter: TokenCounter,
    ledger: _Ledger,
    planned: list[RehydrationItem],
) -> list[RehydrationItem]:
    """Third pass: first reads. A selected memory of an unread result shows the whole result.

    Runs after selection on the budget selection left over, newest result
    first, so it never displaces anything; a result too big for
    ``unread_result_bytes``, the byte cap or the leftover budget, or whose
    route may not carry raw bytes, stays a summary (with its locator).
    """
    if policy.unread_result_bytes <= 0:
        return []
    unread = unread_artifact_ids(candidates, viewer.participant_id)
    if not unread:
        return []
    artifacts = {artifact.id: artifact for artifact in candidates.artifacts}
    memories = {memory.id: memory for memory in candidates.tool_memories}
    already = {item.artifact_id for item in planned}
    remaining = policy.unread_total_bytes
    plan: list[RehydrationItem] = []
    for item in sorted(kept, key=lambda item: (-item.seq, item.ref)):
        kind, _, memory_id = item.ref.partition(":")
        if kind != "memory" or item.section != "memory" or item.tier == 0:
            continue  # a conflicting memory keeps its line: the CONFLICTS marker matters more
        memory = memories[memory_id]
        sources = [artifacts[a] for a in memory.source_artifact_ids if a in artifacts and a in unread]
        if len(sources) != 1 or sources[0].id in already:
            continue
        artifact = sources[0]
        ref = f"artifact:{artifact.id}"
        if artifact.content_type == FILE_CONTENT_TYPE or artifact.status is not ToolCallStatus.SUCCEEDED:
            continue  # a file handle's line already says all of it; an error shows as recovery state
        denial = admit(artifact, artifact.privacy, viewer)
        if denial:
            ledger.deny("first_read", ref, denial)
            continue
        if artifact.privacy not in viewer.route.raw_allowed:
            ledger.decide("first_read", ref, DecisionOutcome.OMITTED,
                          f"unread result stays a summary: raw {artifact.privacy.value} not allowed on route "
                          f"{viewer.route.name}", OmissionReason.RAW_PRIVACY)
            continue
        if artifact.result_bytes > min(policy.unread_result_bytes, remaining):
            ledger.decide("first_read", ref, DecisionOutcome.OMITTED,
                          f"unread result stays a summary: {artifact.result_bytes} bytes is over the "
                          f"first-read cap", OmissionReason.RAW_BYTE_BUDGET)
            continue
        tokens = artifact.result_tokens or artifact.result_bytes // 3 + 1
        extra = tokens + _FENCE_TOKENS - counter(item.text)
        if extra > left:
            ledger.decide("first_read", ref, DecisionOutcome.OMITTED,
                          f"unread result stays a summary: {tokens} tokens do not fit the {left} left",
                          OmissionReason.BUDGET)
            continue
        left -= max(extra, 0)
        remaining -= artifact.result_bytes
        plan.append(RehydrationItem(artifact_id=artifact.id, max_bytes=artifact.result_bytes, memory_id=memory.id))
        ledger.decide("first_read", ref, DecisionOutcome.REHYDRATED,
                      f"unread result of memory {memory.id}: shown whole ({artifact.result_bytes} bytes) "
                      "in place of its summary")
    return plan


# --------------------------------------------------------------------------- rendering


def render_context(
    selection: Selection,
    raw_payloads: Mapping[str, bytes],
    counter: TokenCounter,
    unavailable: Mapping[str, str] | None = None,
) -> AssemblyResult:
    """Second pure pass: serialise the selection into provider messages.

    Args:
        selection: the output of :func:`select_context`.
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
            reason = unavailable[planned.artifact_id]
            sections["evidence"].append(f"[a:{short(planned.artifact_id)}] raw evidence unavailable: {reason}")
            continue
        if planned.artifact_id not in raw_payloads:
            raise DerivationError(f"rehydration planned for artifact {planned.artifact_id} but no bytes given")
        text = bounded(slice_payload(raw_payloads[planned.artifact_id], planned.locator), planned.max_bytes)
        head = f"[a:{short(planned.artifact_id)}] {describe(planned.locator)}:"
        sections["evidence"].append(f"{head}\n{fenced(text)}")
    sections["evidence"] += selection.raw_denials

    blocks = [selection.participant.system_prompt] if selection.participant.system_prompt else []
    for name, title in SECTION_TITLES.items():
        if sections[name]:
            blocks.append(title + "".join("\n- " + line for line in sections[name]))
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
    return (f"[m:{short(planned.memory_id or '')}] {title} → [a:{short(planned.artifact_id)}] "
            f"{FIRST_READ_LABEL}:\n{fenced(text)}")


def assemble(
    policy: ContextPolicy,
    boundary: GenerationBoundary,
    candidates: CandidateSet,
    counter: TokenCounter,
    raw_payloads: Mapping[str, bytes] | None = None,
) -> AssemblyResult:
    """Both passes at once, for callers that already hold the raw payloads.

    ``raw_payloads`` must contain every artifact the selection plans to
    rehydrate; pass a mapping of all candidate payloads in tests and benchmarks.
    """
    selection = select_context(policy, boundary, candidates, counter)
    payloads = raw_payloads or {}
    needed = {planned.artifact_id: payloads[planned.artifact_id] for planned in selection.rehydration
              if planned.artifact_id in payloads}
    return render_context(selection, needed, counter)


__all__ = [
    "ASSEMBLER_VERSION",
    "AssemblyResult",
    "Item",
    "Selection",
    "assemble",
    "render_context",
    "select_context",
    "short_ids_for",
]
