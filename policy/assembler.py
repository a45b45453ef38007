"""The context assembler: policy + generation boundary + candidates -> provider messages.

Two pure passes, with the caller's I/O between them::

    selection = select_context(policy, boundary, candidates, counter)
    raw = {item.artifact_id: <bytes from the artifact store> for item in selection.rehydration}
    result = render_context(selection, raw, counter)

``select_context`` runs the numbered stages in order, each in its module (the map is in
:mod:`policy`): admission (1-5), transcript (6), budget (7), rehydration (8) and the appended
events with their first reads (9, :mod:`policy.native`), all over one
:class:`~policy.selection.SelectionContext` per pass.

``render_context`` (:mod:`policy.render`) serialises the selection to
OpenAI-style messages, in the line format of :mod:`policy.lines`, and builds
the :class:`ContextAssemblyRecord`. Neither pass reads a clock, draws a
random number or depends on dict or set order: the same inputs give
byte-identical output (``content_sha256`` proves it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from policy.admission import admit_records, resolve_viewer
from policy.budget import spend_budget
from policy.enums import DecisionOutcome
from policy.epochs import (
    EPOCH_CONTINUED,
    break_even_reason,
    cold_cache_gap,
    cold_cache_reason,
    continuation_blocker,
    epoch_id,
    fresh_boundary,
    in_epoch,
    incompatibility,
    own_model_calls,
    prefix_digest,
    restart_pays,
    split_at,
    stale_note_texts,
    stale_notes,
    with_cache_tier,
)
from policy.errors import BoundaryMismatchError, UnknownParticipantError
from policy.gates import admit
from policy.lines import ShortIds
from policy.native import READ_MODES, plan_events
from policy.policy import ContextPolicy
from policy.records import (
    CandidateSet,
    EpochRecord,
    GenerationBoundary,
    ParticipantRecord,
    PreviousAssembly,
)
from policy.rehydration import plan_rehydration
from policy.render import ASSEMBLER_VERSION, AssemblyResult, prefix_parts, render_context
from policy.selection import Item, Ledger, Selection, SelectionContext
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
    appended natively (:mod:`policy.native`). ``previous`` is the
    participant's previous assembly on the branch (its epoch), if any.

    Raises:
        UnknownParticipantError: the boundary's participant is not a candidate.
        BoundaryMismatchError: the candidates belong to another branch.
    """
    if candidates.lineage.active_branch_id != boundary.branch_id:
        raise BoundaryMismatchError(
            f"candidates were loaded for branch {candidates.lineage.active_branch_id}, boundary is {boundary.branch_id}"
        )
    _participant(candidates, boundary.participant_id)  # an unknown participant is an error, not an empty context
    short = short_ids_for(candidates)
    return with_cache_tier(_in_some_epoch(policy, boundary, candidates, counter, short, previous), previous)


def _in_some_epoch(policy: ContextPolicy, boundary: GenerationBoundary, candidates: CandidateSet,
                   counter: TokenCounter, short: ShortIds, previous: PreviousAssembly | None) -> Selection:
    """The previous call's epoch continued, or a new one and why (:mod:`policy.epochs`)."""
    # 0 is a budget (protected state only), not "unset".
    budget = policy.default_token_budget if boundary.token_budget is None else boundary.token_budget
    reason = incompatibility(policy, boundary, candidates, previous)
    if reason is None and previous is not None:
        epoch = previous.epoch
        frame = _Frame(budget, epoch.boundary_seq, epoch.started_snapshot_seq, epoch.prefix_budget, epoch)
        selection = _select(_pass(policy, boundary, candidates, counter, short), frame)
        reason = continuation_blocker(policy, epoch, selection)
        if reason is None:
            fresh = _break_even(selection, counter, short) or _cold_cache(selection, previous, counter, short)
            return fresh or in_epoch(selection, epoch.epoch_id, started=False, reason=EPOCH_CONTINUED)
    selection, new_epoch = _fresh(policy, boundary, candidates, counter, short, budget)
    return in_epoch(selection, new_epoch, started=True, reason=reason or "new epoch")


def _fresh(policy: ContextPolicy, boundary: GenerationBoundary, candidates: CandidateSet, counter: TokenCounter,
           short: ShortIds, budget: int) -> tuple[Selection, str]:
    """A new epoch's selection at a fresh boundary, and the epoch's id."""
    boundary_seq = fresh_boundary(candidates, boundary.participant_id)
    frame = _Frame(budget, boundary_seq, candidates.snapshot_seq, None)
    selection = _select(_pass(policy, boundary, candidates, counter, short), frame)
    return selection, epoch_id(boundary_seq, selection.epoch.prefix_digest)


def _break_even(continued: Selection, counter: TokenCounter, short: ShortIds) -> Selection | None:
    """A new epoch instead of ``continued`` when it repays its cache write (:func:`policy.epochs.restart_pays`)."""
    policy, boundary, candidates = continued.policy, continued.boundary, continued.candidates
    if not policy.epoch_break_even or continued.events.tokens < policy.break_even_min_tokens:
        return None
    now_tokens = continued.prefix_tokens + continued.events.tokens
    horizon = own_model_calls(candidates, boundary.participant_id)
    # The fresh context holds at least the prompt: no smaller one can pay, so skip the pass.
    if not restart_pays(policy, now_tokens, 0, horizon):
        return None
    fresh, new_epoch = _fresh(policy, boundary, candidates, counter, short, continued.token_budget)
    fresh_tokens = fresh.prefix_tokens + fresh.events.tokens
    if not restart_pays(policy, now_tokens, fresh_tokens, horizon):
        return None
    return in_epoch(fresh, new_epoch, started=True, reason=break_even_reason(now_tokens, fresh_tokens, horizon))


def _cold_cache(continued: Selection, previous: PreviousAssembly, counter: TokenCounter,
                short: ShortIds) -> Selection | None:
    """A new epoch instead of ``continued`` when the provider's cache has gone cold and the new one is smaller.

    Continuing a cold epoch writes the whole grown context to the cache again; a new epoch writes only what
    the policy assembles now, so the restart costs nothing the continuation would not.
    """
    policy, boundary, candidates = continued.policy, continued.boundary, continued.candidates
    cold = cold_cache_gap(policy, boundary, previous)
    if cold is None:
        return None
    gap, ttl = cold
    now_tokens = continued.prefix_tokens + continued.events.tokens
    fresh, new_epoch = _fresh(policy, boundary, candidates, counter, short, continued.token_budget)
    fresh_tokens = fresh.prefix_tokens + fresh.events.tokens
    if fresh_tokens >= now_tokens:
        return None
    return in_epoch(fresh, new_epoch, started=True, reason=cold_cache_reason(gap, ttl, now_tokens, fresh_tokens))


@dataclass(frozen=True)
class _Frame:
    """Where one pass cuts the prefix from the appended events, and what the prefix may spend."""

    budget: int
    """The whole context's token budget."""
    boundary_seq: int
    started_snapshot_seq: int
    prefix_budget: int | None
    """A continued epoch's; ``None`` for a new epoch, whose prefix gets what its events leave of ``budget``."""
    continued: EpochRecord | None = None


def _pass(policy: ContextPolicy, boundary: GenerationBoundary, candidates: CandidateSet, counter: TokenCounter,
          short: ShortIds) -> SelectionContext:
    """A fresh pass over the candidates: its own ledger, with the viewer's route decided first."""
    ledger = Ledger(policy.version_tag)
    viewer = resolve_viewer(policy, boundary, candidates, ledger)
    return SelectionContext(policy=policy, boundary=boundary, candidates=candidates,
                            participant=_participant(candidates, boundary.participant_id), viewer=viewer,
                            short=short, counter=counter, ledger=ledger)


def _select(ctx: SelectionContext, frame: _Frame) -> Selection:
    """stages 1-9 over the records up to the frame's boundary, and the events after it.

    Events that alone would not fit a new epoch's budget show their results as summaries instead of
    whole. With ``epoch_staleness="note"``, a continued epoch's prefix keeps the freshness it started
    with, and a prefix memory that has gone stale since gets a note after the events.
    """
    policy, boundary, candidates, ledger = ctx.policy, ctx.boundary, ctx.candidates, ctx.ledger
    continued = frame.continued
    noting = continued is not None and policy.epoch_staleness == "note" and continued.started_at is not None
    started_at = continued.started_at if continued is not None and continued.started_at else boundary.now
    prefix_ctx = ctx.at(boundary.model_copy(update={"now": started_at})) if noting else ctx
    prefix, events = split_at(candidates, frame.boundary_seq, ctx.participant.id)
    # Appended results that existed when the epoch started replace and contradict prefix memories like any
    # other (the prefix was assembled knowing them); later ones restart the epoch, or are noted after the result.
    call_of_artifact = {artifact.id: artifact.tool_call_id for artifact in candidates.artifacts}
    appended = {
        m.id: call_of_artifact[m.source_artifact_ids[0]] for m in candidates.tool_memories
        if m.id in events.memory_ids
        and (policy.epoch_supersession == "restart" or m.seq <= frame.started_snapshot_seq)
    }
    items = admit_records(prefix_ctx, prefix, appended)
    items += transcript_items(ctx, prefix)
    whole = True
    prefix_budget = frame.prefix_budget
    if prefix_budget is None:
        sizing = plan_events(ctx, events.messages)
        whole = sizing.tokens <= frame.budget
        if not whole:
            sizing = plan_events(ctx, events.messages, whole=False)
        prefix_budget = max(0, frame.budget - sizing.tokens)
    catalog = catalog_text(boundary.skill_catalog)
    kept, prefix_tokens = spend_budget(ctx, items, prefix_budget, catalog)
    rehydration, raw_denials = plan_rehydration(ctx, kept)
    for message in events.messages:
        denial = admit(message, message.privacy, ctx.viewer)
        if denial:
            ledger.deny("visibility", f"message:{message.id}", denial)
    prefix_memories = frozenset(item.ref.removeprefix("memory:") for item in kept if item.ref.startswith("memory:"))
    noted = stale_notes(policy, boundary, candidates, continued, prefix_memories) if continued and noting else ()
    open_leads = {item.ref.removeprefix("tool_call:") for item in kept if item.section == "recovery"}
    prefix_open = frozenset(open_leads | {  # and the failures their lines name (grouped by tool)
        d.subject_ref.removeprefix("tool_call:") for d in ledger.decisions
        if d.kind == "tool_call" and d.outcome is DecisionOutcome.PROTECTED
        and d.reason.rsplit("tool_call:", 1)[-1] in open_leads})
    plan = plan_events(ctx, events.messages, prefix_memories, whole=whole,
                       stale_notes=stale_note_texts(ctx, noted), prefix_open=prefix_open)
    for event in plan.events:
        ledger.decide("appended", event.ref, DecisionOutcome.INCLUDED, "after the epoch's boundary, in order")
        for result in event.results:
            outcome = DecisionOutcome.REHYDRATED if result.mode in READ_MODES else DecisionOutcome.INCLUDED
            how = f"view of at most {result.max_bytes} bytes" if result.mode == "view" else result.mode
            ledger.decide("appended", f"tool_call:{result.call.id}", outcome,
                          f"own result as a native tool message ({how})")
    items_keys = prefix_parts(ctx.participant, kept, rehydration, raw_denials, candidates, catalog)
    epoch = EpochRecord(
        epoch_id="", started=False, reason="", boundary_seq=frame.boundary_seq,
        started_snapshot_seq=frame.started_snapshot_seq, prefix_budget=prefix_budget, prefix_messages=0,
        prefix_digest=prefix_digest(items_keys), prefix_items=tuple(items_keys), appended_tokens=plan.tokens,
        pending_calls=plan.pending, started_at=started_at, stale_notes=tuple(noted),
    )
    return Selection(
        policy=policy,
        boundary=boundary,
        candidates=candidates,
        participant=ctx.participant,
        items=tuple(kept),
        rehydration=(*rehydration, *plan.rehydration),
        raw_denials=tuple(raw_denials),
        decisions=tuple(ledger.decisions),
        omitted=dict(sorted(ledger.omitted.items())),
        token_budget=frame.budget,
        short_ids=ctx.short,
        events=plan,
        epoch=epoch,
        prefix_tokens=prefix_tokens,
    )


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
        candidates.messages,
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
