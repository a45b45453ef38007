"""Admission: stages 1-5, deciding which graph records may compete for the budget.

1. **Route**: :func:`resolve_viewer` looks up the boundary's provider route; an
   unknown route fails closed to public records only.
2. **Lineage and visibility**: every record passes the gates of
   :mod:`policy.gates` (lineage, scope, promotion, privacy) for this viewer.
3. **Supersession and contradiction**: a memory replaced by one the viewer
   can see is dropped; live conflicts stay, marked on both sides; only the
   latest checkpoint per kind and state per skill is kept.
4. **Freshness**: a memory past ``stale_after`` becomes a stale marker (or is
   omitted, as the policy says).
5. **Recovery protection**: unresolved and failed calls are protected open
   state for their owner; a failure shown as an open call needs no second line.

:func:`admit_records` runs stages 2-5 over tool memories, tool calls,
checkpoints, skill states and user memories; messages are the transcript's
(:mod:`policy.transcript`). The gate checks themselves live in :mod:`policy.gates`.
"""

from __future__ import annotations

from collections.abc import Mapping

from policy.enums import (
    UNRESOLVED_STATUSES,
    DecisionOutcome,
    OmissionReason,
    PrivacyClass,
    RecordClass,
    ToolCallStatus,
)
from policy.gates import Viewer, admit, check_privacy, is_stale, stale_at
from policy.lines import (
    RefKind,
    ShortIds,
    checkpoint_line,
    memory_line,
    older_failures_line,
    receipt_line,
    skill_line,
    stale_marker_line,
    tool_call_line,
    tool_failures_line,
    user_memory_line,
)
from policy.lines import ref as cross_ref
from policy.policy import FAIL_CLOSED_ROUTE, ContextPolicy, ProviderRoute
from policy.records import CandidateSet, GenerationBoundary, ToolCallRecord, ToolMemoryRecord
from policy.selection import Item, Ledger, SelectionContext, by_seq


def resolve_viewer(
    policy: ContextPolicy, boundary: GenerationBoundary, candidates: CandidateSet, ledger: Ledger
) -> Viewer:
    """Stage 1: who views the candidates, on which lineage, through which route.

    Args:
        policy: the rule set naming the known routes.
        boundary: names the participant and the provider route.
        candidates: carry the active branch's lineage.
        ledger: receives the denial when the route is unknown.

    Returns:
        The viewer every gate checks against; an unknown route becomes
        :data:`policy.policy.FAIL_CLOSED_ROUTE`.
    """
    route = policy.route(boundary.provider_route)
    if route is None:
        route = FAIL_CLOSED_ROUTE
        ledger.decide(
            "route",
            f"route:{boundary.provider_route}",
            DecisionOutcome.DENIED,
            "unknown provider route: failing closed to public records only",
        )
    limit = boundary.route_limit
    if limit is not None:
        allowed = route.allowed & limit.allowed
        route = ProviderRoute(name=f"{route.name}+agent", allowed=allowed,
                              raw_allowed=route.raw_allowed & limit.raw_allowed & allowed)
        ledger.decide(
            "route",
            f"route:{boundary.provider_route}",
            DecisionOutcome.NOTED,
            "the agent's route narrows it to "
            f"{_classes(route.allowed)} (raw: {_classes(route.raw_allowed)})",
        )
    return Viewer(boundary.participant_id, candidates.lineage, route)


def _classes(classes: frozenset[PrivacyClass]) -> str:
    return ", ".join(sorted(c.value for c in classes)) or "none"


def admit_records(
    ctx: SelectionContext,
    candidates: CandidateSet,
    appended: Mapping[str, str] | None = None,
) -> list[Item]:
    """Stages 2-5 over every candidate but messages: the items that may compete for the budget.

    Args:
        ctx: the pass (its boundary gives the logical ``now`` and the evidence requests).
        candidates: the records up to the epoch's boundary.
        appended: memory id -> tool call id of the participant's own results
            appended natively after the epoch's boundary (so not among
            ``candidates``): visible replacements and counterparts for
            supersession and conflict, cited by their call (``t:<id>``).

    Returns:
        Memory, stale-marker, open-call, receipt, planning and user-fact items.
    """
    policy, boundary, viewer, short, ledger = ctx.policy, ctx.boundary, ctx.viewer, ctx.short, ctx.ledger
    covered_calls, items, settled = _memories(ctx, candidates, appended or {})
    call_items, grouped = _tool_calls(policy, candidates, viewer, short, ledger, covered=covered_calls,
                                      settled=settled)
    items += call_items
    items = _drop_memories_of_open_calls(items, candidates, ledger, grouped)
    items += _planning(candidates, viewer, short, ledger)
    items += _user_memories(candidates, viewer, ledger)
    _count_unrequested_raw(candidates, viewer, ledger, boundary)
    return items


def _memories(
    ctx: SelectionContext,
    candidates: CandidateSet,
    appended: Mapping[str, str],
) -> tuple[set[str], list[Item]]:
    """Admit tool memories; returns the tool calls they cover, their items, and the settled failures."""
    policy, boundary, viewer, short, ledger = ctx.policy, ctx.boundary, ctx.viewer, ctx.short, ctx.ledger
    call_of_artifact = {artifact.id: artifact.tool_call_id for artifact in candidates.artifacts}
    brief = not policy.detailed_memories(boundary.token_budget)
    passed: list[ToolMemoryRecord] = []
    for memory in by_seq(candidates.tool_memories):
        ref = f"memory:{memory.id}"
        denial = admit(memory, memory.privacy, viewer)
        if denial:
            ledger.deny("visibility" if denial.reason is not OmissionReason.PRIVACY_ROUTE else "privacy", ref, denial)
            continue
        passed.append(memory)

    # A replacement this viewer cannot see (a sibling branch's, another
    # participant's private memory, one outside the candidates) replaces nothing.
    # Supersession is read from the replacing side: ``supersedes`` lists every memory a memory replaced,
    # while ``superseded_by`` names only the newest replacement, which may be on a sibling branch.
    passed_ids = {memory.id for memory in passed} | set(appended)
    replaced_by: dict[str, str] = {}
    for memory in passed:
        for old in memory.supersedes:
            replaced_by[old] = memory.id
    # A result appended natively after the boundary replaces what it superseded on this lineage too (its
    # memory is not among this pass's candidates: the whole pool has it).
    for memory in ctx.candidates.tool_memories:
        if memory.id in appended:
            for old in memory.supersedes:
                replaced_by.setdefault(old, memory.id)
    covered: set[str] = set()
    admitted: list[ToolMemoryRecord] = []
    replacements: dict[str, str] = {}
    for memory in passed:
        replacement = memory.superseded_by if memory.superseded_by in passed_ids else replaced_by.get(memory.id)
        if replacement is not None:
            replacements[memory.id] = replacement
            # Its call is represented too: by the replacement, not by a receipt line.
            covered.update(call_of_artifact[a] for a in memory.source_artifact_ids if a in call_of_artifact)
            ledger.decide(
                "supersession", f"memory:{memory.id}", DecisionOutcome.OMITTED,
                f"superseded by memory {replacement}", OmissionReason.SUPERSEDED,
            )
            continue
        admitted.append(memory)

    admitted_ids = {memory.id for memory in admitted} | set(appended)
    cited_as = {memory_id: cross_ref(RefKind.TOOL_CALL, short(call_id)) for memory_id, call_id in appended.items()}
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
        text = memory_line(memory, short, conflicts, cited_as, brief=brief)
        items.append(Item(ref, "memory", RecordClass.EPISTEMIC, False, 0 if conflicts else 1, memory.seq, text))
    return covered, items, settled_failures(ctx.candidates, {**replaced_by, **replacements})


def settled_failures(candidates: CandidateSet, replacements: Mapping[str, str]) -> dict[str, str]:
    """Failed calls that are settled on this lineage: call id -> the succeeded memory that settled it.

    The one rule for when recovery state is resolved: a failed call's memory was replaced here (directly or
    through later failures of the same resource) by the memory of a call that succeeded. Until then the
    failure stays protected recovery state; after, it is done, and reads as done.

    Args:
        replacements: memory id -> the memory that replaced it on this lineage (admission's decision).
    """
    status = {artifact.id: artifact.status for artifact in candidates.artifacts}
    call_of = {artifact.id: artifact.tool_call_id for artifact in candidates.artifacts}
    sources = {memory.id: memory.source_artifact_ids for memory in candidates.tool_memories}

    def succeeded(memory_id: str) -> bool:
        return any(status.get(a) is ToolCallStatus.SUCCEEDED for a in sources.get(memory_id, ()))

    settled: dict[str, str] = {}
    for old in replacements:
        failed = [call_of[a] for a in sources.get(old, ()) if status.get(a) is ToolCallStatus.FAILED and a in call_of]
        newer, seen = replacements[old], {old}
        while not succeeded(newer) and newer in replacements and newer not in seen:
            seen.add(newer)
            newer = replacements[newer]
        if failed and succeeded(newer):
            settled.update(dict.fromkeys(failed, newer))
    return settled


def _drop_memories_of_open_calls(items: list[Item], candidates: CandidateSet, ledger: Ledger,
                                 grouped: set[str]) -> list[Item]:
    """A failed call shown as open recovery state (alone or grouped) needs no second line for its error memory."""
    open_calls = {item.ref.removeprefix("tool_call:") for item in items if item.section == "recovery"} | grouped
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
    ledger: Ledger,
    *,
    covered: set[str],
    settled: Mapping[str, str],
) -> tuple[list[Item], set[str]]:
    """Unresolved and failed calls are protected recovery state for their owner, until settled.

    Each open (pending, deferred, retrying) call keeps a line of its own. The
    owner's failed calls are grouped (:func:`_failure_items`) so that many
    failures cost a bounded number of lines, every id still named. Returns the
    items and the failed calls shown inside another call's line.
    """
    items: list[Item] = []
    own_failures: list[ToolCallRecord] = []
    for call in by_seq(candidates.tool_calls):
        ref = f"tool_call:{call.id}"
        denial = admit(call, call.privacy, viewer)
        if denial:
            ledger.deny("visibility", ref, denial)
            continue
        unresolved = call.status in UNRESOLVED_STATUSES
        if call.id in settled:  # a later call of the same resource succeeded here: done, not open
            ledger.decide("tool_call", ref, DecisionOutcome.OMITTED,
                          f"failed; settled by the later success of memory:{settled[call.id]}",
                          OmissionReason.RESOLVED_ELSEWHERE)
            continue
        if unresolved or (call.retry_critical and call.status is not ToolCallStatus.SUCCEEDED):
            protected = call.participant_id == viewer.participant_id
            if protected and call.status is ToolCallStatus.FAILED:
                own_failures.append(call)
                continue
            text = tool_call_line(call, short, policy.max_error_chars)
            items.append(Item(ref, "recovery", RecordClass.RECOVERY, protected, 0, call.seq, text))
        elif call.id in covered:
            ledger.decide(
                "tool_call", ref, DecisionOutcome.OMITTED,
                "succeeded; represented by its tool memory", OmissionReason.RESOLVED_ELSEWHERE,
            )
        else:
            items.append(Item(ref, "receipt", RecordClass.OPERATIONAL, False, 0, call.seq, receipt_line(call, short)))
    failure_items, grouped = _failure_items(policy, own_failures, short, ledger)
    for count, what in ((candidates.unloaded_open_calls, "open"), (candidates.unloaded_failed_calls, "failed")):
        if count:  # past the candidate limits: never silently gone
            ledger.decide("tool_call", f"tool_calls:unloaded-{what}", DecisionOutcome.OMITTED,
                          f"{count} older {what} tool call(s) on this lineage past the candidate limit, not loaded",
                          OmissionReason.OUTSIDE_WINDOW)
    return items + failure_items, grouped


def _failure_items(
    policy: ContextPolicy,
    failures: list[ToolCallRecord],
    short: ShortIds,
    ledger: Ledger,
) -> tuple[list[Item], set[str]]:
    """The owner's failed calls as a bounded number of protected lines, every id named.

    Failures group by tool, newest first: the ``max_failed_tools`` tools that
    failed most recently get a line each (the newest call's arguments, attempts
    and error verbatim, then the earlier calls' ids); the failed calls of every
    other tool share one line of tool names, counts and ids. A grouped call is
    recorded as protected, shown in its group's line.
    """
    by_tool: dict[str, list[ToolCallRecord]] = {}
    for call in sorted(failures, key=lambda c: (-c.seq, c.id)):
        by_tool.setdefault(call.name, []).append(call)
    groups = list(by_tool.values())  # the newest failure's tool first
    items: list[Item] = []
    grouped: set[str] = set()

    def add(lead: ToolCallRecord, members: list[ToolCallRecord], text: str) -> None:
        items.append(Item(f"tool_call:{lead.id}", "recovery", RecordClass.RECOVERY, True, 0, lead.seq, text))
        for call in members:
            if call.id != lead.id:
                grouped.add(call.id)
                ledger.decide("tool_call", f"tool_call:{call.id}", DecisionOutcome.PROTECTED,
                              f"failed; named in the recovery line of tool_call:{lead.id}")

    for calls in groups[:policy.max_failed_tools]:
        add(calls[0], calls, tool_failures_line(calls, short, policy.max_error_chars))
    rest = groups[policy.max_failed_tools:]
    if rest:
        add(rest[0][0], [call for calls in rest for call in calls], older_failures_line(rest, short))
    return items, grouped


def _planning(candidates: CandidateSet, viewer: Viewer, short: ShortIds, ledger: Ledger) -> list[Item]:
    """Latest checkpoint per kind (protected) and latest state per active skill."""
    items: list[Item] = []
    latest_checkpoint: dict[str, str] = {}
    for checkpoint in by_seq(candidates.checkpoints):
        if admit(checkpoint, checkpoint.privacy, viewer) is None:
            latest_checkpoint[checkpoint.kind] = checkpoint.id
    for checkpoint in by_seq(candidates.checkpoints):
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
    for skill in by_seq(candidates.skill_states):
        if admit(skill, skill.privacy, viewer) is None:
            latest_skill[(skill.participant_id, skill.skill)] = skill.id
    for skill in by_seq(candidates.skill_states):
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


def _user_memories(candidates: CandidateSet, viewer: Viewer, ledger: Ledger) -> list[Item]:
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


def _count_unrequested_raw(
    candidates: CandidateSet, viewer: Viewer, ledger: Ledger, boundary: GenerationBoundary
) -> None:
    """Raw payloads are never sent by default; count what stayed in the store."""
    requested = {request.artifact_id for request in boundary.evidence_requests}
    for artifact in by_seq(candidates.artifacts):
        if artifact.id in requested:
            continue
        denial = admit(artifact, artifact.privacy, viewer)
        if denial:
            ledger.omitted[denial.reason.value] += 1
        else:
            ledger.omitted[OmissionReason.RAW_NOT_REQUESTED.value] += 1
