"""The context assembler: policy + generation boundary + candidates -> provider messages.

Two pure passes, with the caller's I/O between them::

    selection = select_context(policy, boundary, candidates, counter)
    raw = {item.artifact_id: <bytes from the artifact store> for item in selection.rehydration}
    result = render_context(selection, raw, counter)

``select_context`` runs the README's numbered stages in order, each in its module:

* 1-5, route, lineage and visibility, supersession and contradiction,
  freshness, recovery protection: :mod:`policy.admission`;
* 6, transcript: :mod:`policy.transcript`;
* 7, budget: :mod:`policy.budget`;
* 8-9, rehydration and first reads: :mod:`policy.rehydration`.

The stages share :mod:`policy.selection` (items, the decision ledger, the result).

``render_context`` (:mod:`policy.render`) serialises the selection to
OpenAI-style messages, in the line format of :mod:`policy.lines`, and builds
the :class:`ContextAssemblyRecord`. Neither pass reads a clock, draws a
random number or depends on dict or set order: the same inputs give
byte-identical output (``content_sha256`` proves it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from policy.admission import admit_records, resolve_viewer
from policy.budget import spend_budget
from policy.enums import DecisionOutcome
from policy.epochs import (
    EPOCH_CONTINUED,
    epoch_id,
    fresh_boundary,
    incompatibility,
    prefix_change,
    prefix_digest,
    split_at,
)
from policy.errors import BoundaryMismatchError, UnknownParticipantError
from policy.gates import admit, is_stale, stale_at
from policy.lines import ShortIds, stale_marker_line
from policy.native import plan_events
from policy.policy import ContextPolicy
from policy.records import (
    CandidateSet,
    EpochRecord,
    GenerationBoundary,
    ParticipantRecord,
    PolicyDecisionRecord,
    PreviousAssembly,
)
from policy.rehydration import plan_rehydration
from policy.render import ASSEMBLER_VERSION, AssemblyResult, prefix_parts, render_context
from policy.selection import Item, Ledger, Selection
from policy.skills import catalog_text
from policy.tokens import TokenCounter
from policy.transcript import transcript_items


def select_context(
    policy: ContextPolicy,
    boundary: GenerationBoundary,
    candidates: CandidateSet,
    counter: TokenCounter,
    previous: PreviousAssembly | None = None,
) -> Selection:
    """First pass: decide every candidate, the epoch, and which raw bytes to read.

    The call continues the participant's epoch when the prefix the policy
    assembles now, at the epoch's boundary, is the one the epoch started with
    (and nothing else stops it: :mod:`policy.epochs`); otherwise it starts a
    new epoch at a fresh boundary. Either way the prefix is the policy's
    assembly of the records up to the boundary, and the events after it are
    appended natively (:mod:`policy.native`).

    Args:
        policy: the immutable rule set.
        boundary: who generates, where, through which route, with what budget.
        candidates: the bounded graph slice loaded for this boundary.
        counter: the injected token counter.
        previous: the participant's previous assembly on the branch (its epoch), if any.

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
    short = short_ids_for(candidates)
    # 0 is a budget (protected state only), not "unset".
    budget = policy.default_token_budget if boundary.token_budget is None else boundary.token_budget
    reason = incompatibility(policy, boundary, candidates, previous)
    if reason is None and previous is not None:
        epoch = previous.epoch
        selection = _select(policy, boundary, candidates, counter, participant, short, budget, epoch.boundary_seq,
                            epoch.started_snapshot_seq, epoch.prefix_budget, epoch)
        reason = _continuation_blocker(policy, epoch, selection)
        if reason is None:
            return _in_epoch(selection, epoch.epoch_id, started=False, reason=EPOCH_CONTINUED)
    boundary_seq = fresh_boundary(candidates, participant.id)
    selection = _select(policy, boundary, candidates, counter, participant, short, budget, boundary_seq,
                        candidates.snapshot_seq, None)
    return _in_epoch(selection, epoch_id(boundary_seq, selection.epoch.prefix_digest), started=True,
                     reason=reason or "new epoch")


def _select(
    policy: ContextPolicy,
    boundary: GenerationBoundary,
    candidates: CandidateSet,
    counter: TokenCounter,
    participant: ParticipantRecord,
    short: ShortIds,
    budget: int,
    boundary_seq: int,
    started_snapshot_seq: int,
    prefix_budget: int | None,
    continued: EpochRecord | None = None,
) -> Selection:
    """README stages 1-9 over the records up to ``boundary_seq``, and the events after it.

    ``prefix_budget`` is the continued epoch's; a new epoch's prefix gets what its events leave of
    ``budget`` (events that alone would not fit show their results as summaries instead of whole).
    With ``epoch_staleness="note"``, a continued epoch's prefix keeps the freshness it started with,
    and a prefix memory that has gone stale since gets a note after the events.
    """
    ledger = Ledger(policy.version_tag)
    noting = continued is not None and policy.epoch_staleness == "note" and continued.started_at is not None
    started_at = continued.started_at if continued is not None and continued.started_at else boundary.now
    prefix_boundary = boundary.model_copy(update={"now": started_at}) if noting else boundary
    viewer = resolve_viewer(policy, boundary, candidates, ledger)
    prefix, events = split_at(candidates, boundary_seq, participant.id)
    # Appended results that existed when the epoch started replace and contradict prefix memories like any
    # other (the prefix was assembled knowing them); later ones restart the epoch, or are noted after the result.
    call_of_artifact = {artifact.id: artifact.tool_call_id for artifact in candidates.artifacts}
    appended = {
        m.id: call_of_artifact[m.source_artifact_ids[0]] for m in candidates.tool_memories
        if m.id in events.memory_ids and (policy.epoch_supersession == "restart" or m.seq <= started_snapshot_seq)
    }
    items = admit_records(policy, prefix_boundary, prefix, viewer, short, ledger, appended)
    items += transcript_items(policy, boundary, prefix, participant, viewer, ledger)
    whole = True
    if prefix_budget is None:
        sizing = plan_events(policy, candidates, events.messages, participant, viewer, short, counter, boundary.now)
        whole = sizing.tokens <= budget
        if not whole:
            sizing = plan_events(policy, candidates, events.messages, participant, viewer, short, counter,
                                 boundary.now, whole=False)
        prefix_budget = max(0, budget - sizing.tokens)
    catalog = catalog_text(boundary.skill_catalog)
    kept, prefix_tokens = spend_budget(policy, items, participant, prefix_budget, counter, ledger, catalog)
    rehydration, raw_denials = plan_rehydration(policy, boundary, candidates, viewer, kept, short, ledger)
    for message in events.messages:
        denial = admit(message, message.privacy, viewer)
        if denial:
            ledger.deny("visibility", f"message:{message.id}", denial)
    prefix_memories = frozenset(item.ref.removeprefix("memory:") for item in kept if item.ref.startswith("memory:"))
    noted = _stale_notes(policy, boundary, candidates, continued, prefix_memories) if noting else ()
    notes = [(after_seq, STALE_NOTE.format(line=stale_marker_line(memory, short, stale_at(memory, policy))))
             for memory, after_seq in ((next(m for m in candidates.tool_memories if m.id == memory_id), after)
                                       for memory_id, after in noted)]
    for memory_id, _ in noted:
        ledger.decide("freshness", f"memory:{memory_id}", DecisionOutcome.MARKED_STALE,
                      "went stale during the epoch: noted after the events (epoch_staleness=note)")
    plan = plan_events(policy, candidates, events.messages, participant, viewer, short, counter, boundary.now,
                       prefix_memories, whole=whole, stale_notes=notes)
    for event in plan.events:
        ledger.decide("appended", event.ref, DecisionOutcome.INCLUDED, "after the epoch's boundary, in order")
        for result in event.results:
            outcome = DecisionOutcome.REHYDRATED if result.mode == "raw" else DecisionOutcome.INCLUDED
            ledger.decide("appended", f"tool_call:{result.call.id}", outcome,
                          f"own result as a native tool message ({result.mode})")
    items_keys = prefix_parts(participant, kept, rehydration, raw_denials, candidates, catalog)
    digest = prefix_digest(items_keys)
    epoch = EpochRecord(
        epoch_id="", started=False, reason="", boundary_seq=boundary_seq, started_snapshot_seq=started_snapshot_seq,
        prefix_budget=prefix_budget, prefix_messages=0, prefix_digest=digest, prefix_items=tuple(items_keys),
        appended_tokens=plan.tokens, pending_calls=plan.pending, started_at=started_at, stale_notes=tuple(noted),
    )
    return Selection(
        policy=policy,
        boundary=boundary,
        candidates=candidates,
        participant=participant,
        items=tuple(kept),
        rehydration=(*rehydration, *plan.rehydration),
        raw_denials=tuple(raw_denials),
        decisions=tuple(ledger.decisions),
        omitted=dict(sorted(ledger.omitted.items())),
        token_budget=budget,
        short_ids=short,
        events=plan,
        epoch=epoch,
        prefix_tokens=prefix_tokens,
    )


STALE_NOTE = "Runtime note: {line}"
"""After the events: a prefix memory that went stale during the epoch (``epoch_staleness="note"``)."""


def _stale_notes(
    policy: ContextPolicy,
    boundary: GenerationBoundary,
    candidates: CandidateSet,
    epoch: EpochRecord,
    prefix_memories: frozenset[str],
) -> tuple[tuple[str, int], ...]:
    """The epoch's staleness notes so far, and one after this call's events for each prefix memory newly stale."""
    noted = {memory_id for memory_id, _ in epoch.stale_notes}
    fresh = tuple(
        (memory.id, candidates.snapshot_seq) for memory in sorted(candidates.tool_memories, key=lambda m: (m.seq, m.id))
        if memory.id in prefix_memories and memory.id not in noted and is_stale(memory, policy, boundary.now)
    )
    return (*(note for note in epoch.stale_notes if note[0] in prefix_memories), *fresh)


def _continuation_blocker(policy: ContextPolicy, epoch: EpochRecord, selection: Selection) -> str | None:
    """Why the call cannot continue ``epoch``, having recomputed its prefix (``None``: it continues)."""
    if selection.epoch.prefix_digest != epoch.prefix_digest:
        return prefix_change(epoch.prefix_items, selection.epoch.prefix_items)
    arrived = [call_id for call_id in epoch.pending_calls if call_id not in selection.events.pending]
    if arrived:
        return f"a result appended as pending has arrived (tool_call:{arrived[0]})"
    if selection.events.stale:
        return f"an appended result went stale (tool_call:{selection.events.stale[0]})"
    total = selection.prefix_tokens + selection.events.tokens
    if total > selection.token_budget:
        return f"the context would reach {total} tokens (budget {selection.token_budget})"
    if policy.epoch_growth_tokens is not None and selection.events.tokens > policy.epoch_growth_tokens:
        return (f"the appended events reached {selection.events.tokens} tokens "
                f"(epoch_growth_tokens {policy.epoch_growth_tokens})")
    return None


def _in_epoch(selection: Selection, epoch: str, *, started: bool, reason: str) -> Selection:
    """The selection with its epoch named, and the epoch decision logged."""
    record = selection.epoch.model_copy(update={"epoch_id": epoch, "started": started, "reason": reason})
    decision = PolicyDecisionRecord(
        kind="epoch", subject_ref=f"epoch:{epoch}", outcome=DecisionOutcome.NOTED,
        reason=f"started: {reason}" if started else reason, policy_version=selection.policy.version_tag,
    )
    return replace(selection, epoch=record, decisions=(*selection.decisions, decision))


def _participant(candidates: CandidateSet, participant_id: str) -> ParticipantRecord:
    for participant in candidates.participants:
        if participant.id == participant_id:
            return participant
    raise UnknownParticipantError(f"participant {participant_id} is not part of this conversation")


def short_ids_for(candidates: CandidateSet) -> ShortIds:
    """The short ids an assembly over ``candidates`` renders (for audit and tests)."""
    ids: list[str] = []
    for group in (
        candidates.tool_calls,
        candidates.artifacts,
        candidates.tool_memories,
        candidates.skill_states,
        candidates.checkpoints,
    ):
        ids += [record.id for record in group]
    return ShortIds(ids)


def assemble(
    policy: ContextPolicy,
    boundary: GenerationBoundary,
    candidates: CandidateSet,
    counter: TokenCounter,
    raw_payloads: Mapping[str, bytes] | None = None,
    previous: PreviousAssembly | None = None,
) -> AssemblyResult:
    """Both passes at once, for callers that already hold the raw payloads.

    ``raw_payloads`` must contain every artifact the selection plans to
    rehydrate; pass a mapping of all candidate payloads in tests and benchmarks.
    ``previous`` is the participant's previous assembly (its epoch), as
    :func:`select_context` takes it.
    """
    selection = select_context(policy, boundary, candidates, counter, previous)
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
