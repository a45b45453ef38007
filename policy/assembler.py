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

from policy.admission import admit_records, resolve_viewer
from policy.budget import spend_budget
from policy.errors import BoundaryMismatchError, UnknownParticipantError
from policy.lines import ShortIds
from policy.policy import ContextPolicy
from policy.records import CandidateSet, GenerationBoundary, ParticipantRecord
from policy.rehydration import plan_first_reads, plan_rehydration
from policy.render import ASSEMBLER_VERSION, AssemblyResult, render_context
from policy.selection import Item, Ledger, Selection
from policy.tokens import TokenCounter
from policy.transcript import transcript_items


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
    ledger = Ledger(policy.version_tag)
    viewer = resolve_viewer(policy, boundary, candidates, ledger)
    short = short_ids_for(candidates)

    items = admit_records(policy, boundary, candidates, viewer, short, ledger)
    items += transcript_items(policy, boundary, candidates, participant, viewer, ledger)
    # 0 is a budget (protected state only), not "unset".
    budget = policy.default_token_budget if boundary.token_budget is None else boundary.token_budget
    kept, spent = spend_budget(policy, items, participant, budget, counter, ledger)
    rehydration, raw_denials = plan_rehydration(policy, boundary, candidates, viewer, kept, short, ledger)
    rehydration += plan_first_reads(policy, candidates, viewer, kept, budget - spent, counter, ledger, rehydration)
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
