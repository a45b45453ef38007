"""Cache epochs: one governed prefix, then the events appended after it, call after call.

Providers bill a prompt prefix they have seen at a fraction of the input
price (0.1x-0.5x). A context assembled afresh for every call shares almost
nothing with the previous one, so it pays full price where an append-only
transcript pays for its cache reads only. An epoch keeps both properties:

1. When an epoch starts, the context is assembled from the graph under the
   policy (stages 1-9, on the records up to the epoch's *boundary*
   ``seq``): that is the **prefix**, with a cache breakpoint at its end.
2. Within the epoch, every later call sends the same prefix, byte for byte,
   then the **events** after the boundary, appended in order through the same
   gates (:mod:`policy.native`).
3. The call starts a new epoch when the prefix would no longer be what the
   policy assembles now: a record in it is superseded, goes stale, becomes
   invisible, an open call in it resolves, new state arrives that is not an
   appendable event (another participant's results, a checkpoint, a user
   memory); or when the route, branch, runtime mode or policy changed; or the
   context would outgrow the token budget (or the appended part
   ``epoch_growth_tokens``); or a placeholder result got its real result, or
   an appended result went stale. Each start and its reason is a PolicyDecision.

Whether the prefix changed is decided by recomputing it: the prefix the
policy would assemble now, at the same boundary, is digested
(:func:`prefix_digest`) and compared with the digest the epoch started with.
The comparison needs no bytes: evidence is identified by artifact, locator
and hash.

A new epoch's boundary (:func:`fresh_boundary`) is just before the
participant's latest tool step when it has not read that step's results yet,
so a first read is the native tool message itself. The prefix is selected on
the budget those events leave, and keeps that budget for the whole epoch (the
recomputed prefix must be the same one).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace

from policy.enums import DecisionOutcome, MessageRole
from policy.gates import is_stale, stale_at
from policy.lines import stale_marker_line
from policy.policy import ContextPolicy
from policy.records import (
    CandidateSet,
    EpochRecord,
    GenerationBoundary,
    MessageRecord,
    PolicyDecisionRecord,
    PreviousAssembly,
    ToolCallRecord,
)
from policy.selection import Selection, SelectionContext

EPOCH_CONTINUED = "continued"
"""The reason an assembly records when it continues its participant's epoch."""

PREFIX_CHANGED = "prefix changed ("
PENDING_ARRIVED = "a result appended as pending has arrived"
APPENDED_STALE = "an appended result went stale"
OVER_BUDGET = "the context would reach"
OVER_GROWTH = "the appended events reached"
BREAK_EVEN = "break-even:"
COLD_CACHE = "cold cache:"
RESTART_PREFIXES = (PREFIX_CHANGED, PENDING_ARRIVED, APPENDED_STALE, OVER_BUDGET, OVER_GROWTH, BREAK_EVEN,
                    COLD_CACHE)
"""How :func:`continuation_blocker`'s and :func:`prefix_change`'s reasons start (the rest names ids and sizes)."""


@dataclass(frozen=True)
class EventRecords:
    """Which records after the boundary are appended as events (and so are not in the prefix)."""

    messages: tuple[MessageRecord, ...]
    """Lineage messages after the boundary, oldest first."""
    tool_call_ids: frozenset[str]
    """The participant's own calls made in those messages (row ids)."""
    artifact_ids: frozenset[str]
    memory_ids: frozenset[str]


def split_at(candidates: CandidateSet, boundary_seq: int, participant_id: str) -> tuple[CandidateSet, EventRecords]:
    """The candidates the prefix is assembled from, and the records appended as events.

    Events are the lineage messages after ``boundary_seq`` and, for the
    participant's own tool steps among them, the calls, their artifacts and
    the memories derived from those alone. Every other record, new or old,
    stays with the prefix: if it is new, the prefix changes and a new epoch
    starts, so nothing the policy would show is ever skipped.

    Args:
        candidates: the graph slice loaded for the call.
        participant_id: whose context this is.

    Returns:
        ``(prefix candidates, events)``.
    """
    messages = tuple(sorted((m for m in candidates.messages if m.seq > boundary_seq), key=lambda m: (m.seq, m.id)))
    calls = frozenset(
        call.id for m in messages
        if m.role is MessageRole.ASSISTANT and m.author_participant_id == participant_id
        for call in step_calls(candidates, m).values()
    )
    artifacts = frozenset(a.id for a in candidates.artifacts if a.tool_call_id in calls)
    memories = frozenset(m.id for m in candidates.tool_memories
                         if m.source_artifact_ids and set(m.source_artifact_ids) <= artifacts)
    event_ids = {m.id for m in messages}
    prefix = candidates.model_copy(update={
        "messages": tuple(m for m in candidates.messages if m.id not in event_ids),
        "tool_calls": tuple(c for c in candidates.tool_calls if c.id not in calls),
        "artifacts": tuple(a for a in candidates.artifacts if a.id not in artifacts),
        "tool_memories": tuple(m for m in candidates.tool_memories if m.id not in memories),
    })
    return prefix, EventRecords(messages, calls, artifacts, memories)


def step_calls(candidates: CandidateSet, message: MessageRecord) -> dict[str, ToolCallRecord]:
    """The tool-call records of an assistant message's requests, by the request's call id.

    A record belongs to the message when it is the author's, has the request's
    call id and the message's model run; without a run, the record nearest to
    the message in ``seq`` (a runtime may write the call just before or just
    after the message, and providers reuse call ids across steps).
    """
    out: dict[str, ToolCallRecord] = {}
    for request in message.tool_calls:
        matches = [c for c in candidates.tool_calls
                   if c.participant_id == message.author_participant_id and c.call_id == request.call_id]
        same_run = [c for c in matches if message.model_run_id is not None and c.model_run_id == message.model_run_id]
        pool = same_run or matches
        if pool:
            out[request.call_id] = min(pool, key=lambda c: (abs(c.seq - message.seq), c.seq, c.id))
    return out


def own_tool_steps(candidates: CandidateSet, participant_id: str) -> list[MessageRecord]:
    """The participant's assistant messages that called tools, newest first."""
    steps = [m for m in candidates.messages
             if m.role is MessageRole.ASSISTANT and m.author_participant_id == participant_id and m.tool_calls]
    return sorted(steps, key=lambda m: (-m.seq, m.id))


def latest_own_message(candidates: CandidateSet, participant_id: str) -> MessageRecord | None:
    """The participant's newest assistant message on the lineage (its latest model call)."""
    own = [m for m in candidates.messages
           if m.role is MessageRole.ASSISTANT and m.author_participant_id == participant_id]
    return max(own, key=lambda m: (m.seq, m.id), default=None)


def fresh_boundary(candidates: CandidateSet, participant_id: str) -> int:
    """Where a new epoch's events begin.

    Just before the participant's latest tool step when that step is its
    latest model call (the results arrived after it: unread, so they are
    appended as native tool messages); otherwise at the snapshot, and the new
    prefix holds everything.
    """
    latest = latest_own_message(candidates, participant_id)
    steps = own_tool_steps(candidates, participant_id)
    if latest is not None and steps and steps[0].id == latest.id:
        return latest.seq - 1
    return candidates.snapshot_seq


def item_key(ref: str, text: str) -> str:
    """``<ref>#<sha256 of its rendering, 12 hex>``: one prefix part, as digested and recorded."""
    return f"{ref}#{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def prefix_digest(items: Sequence[str]) -> str:
    """sha256 over the prefix's parts (:func:`item_key`), in order."""
    return hashlib.sha256("\n".join(items).encode()).hexdigest()


def epoch_id(boundary_seq: int, digest: str) -> str:
    """An epoch's id: its boundary and the digest it started with."""
    return f"{boundary_seq}-{digest[:12]}"


def incompatibility(
    policy: ContextPolicy, boundary: GenerationBoundary, candidates: CandidateSet, previous: PreviousAssembly | None
) -> str | None:
    """Why the previous assembly's epoch cannot continue at all, or ``None``.

    Args:
        policy: the policy in force.
        previous: the participant's previous assembly on the branch, if any.

    Returns:
        A reason, or ``None`` when only the prefix comparison can stop it.
    """
    if not policy.epochs:
        return "epochs are off (epochs=false)"
    if previous is None:
        return "first call of the participant on this branch"
    if previous.policy_version != policy.version_tag:
        return f"policy changed from {previous.policy_version}"
    if previous.branch_id != boundary.branch_id:
        return "branch changed"
    if previous.provider_route != boundary.provider_route:
        return f"provider route changed from {previous.provider_route}"
    if previous.runtime_kind is not boundary.runtime_kind:
        return f"runtime mode changed from {previous.runtime_kind.value}"
    if previous.snapshot_seq > candidates.snapshot_seq:
        return "assembling an older snapshot than the previous call"
    if previous.epoch.boundary_seq > candidates.snapshot_seq:
        return "the epoch's boundary is past this snapshot"
    return None


def prefix_change(previous_items: Sequence[str], items: Sequence[str]) -> str:
    """What differs between two prefixes, for the restart's reason."""
    before = {key.rsplit("#", 1)[0]: key for key in previous_items}
    now = {key.rsplit("#", 1)[0]: key for key in items}
    added = [ref for ref in now if ref not in before]
    removed = [ref for ref in before if ref not in now]
    changed = [ref for ref in now if ref in before and now[ref] != before[ref]]
    parts = [f"{label}: {', '.join(refs[:3])}{' ...' if len(refs) > 3 else ''}"
             for label, refs in (("changed", changed), ("new", added), ("gone", removed)) if refs]
    return PREFIX_CHANGED + ("; ".join(parts) or "order") + ")"


# --------------------------------------------------------------------------- continuing an epoch


def continuation_blocker(policy: ContextPolicy, epoch: EpochRecord, selection: Selection) -> str | None:
    """Why the call cannot continue ``epoch``, having recomputed its prefix (``None``: it continues)."""
    if selection.epoch.prefix_digest != epoch.prefix_digest:
        return prefix_change(epoch.prefix_items, selection.epoch.prefix_items)
    arrived = [call_id for call_id in epoch.pending_calls if call_id not in selection.events.pending]
    if arrived:
        return f"{PENDING_ARRIVED} (tool_call:{arrived[0]})"
    if selection.events.stale:
        return f"{APPENDED_STALE} (tool_call:{selection.events.stale[0]})"
    total = selection.prefix_tokens + selection.events.tokens
    if total > selection.token_budget:
        return f"{OVER_BUDGET} {total} tokens (budget {selection.token_budget})"
    if policy.epoch_growth_tokens is not None and selection.events.tokens > policy.epoch_growth_tokens:
        return (f"{OVER_GROWTH} {selection.events.tokens} tokens "
                f"(epoch_growth_tokens {policy.epoch_growth_tokens})")
    return None


def own_model_calls(candidates: CandidateSet, participant_id: str) -> int:
    """How many model calls the participant has made on the lineage (its assistant messages)."""
    return sum(1 for m in candidates.messages
               if m.role is MessageRole.ASSISTANT and m.author_participant_id == participant_id)


def restart_pays(policy: ContextPolicy, now_tokens: int, fresh_tokens: int, horizon: int) -> bool:
    """Whether starting a new epoch of ``fresh_tokens`` beats continuing one of ``now_tokens`` over ``horizon`` calls.

    Continuing reads the whole context from the cache on this call and each later one:
    ``horizon * read * now``. Restarting writes the smaller context once, then reads it:
    ``write * fresh + (horizon - 1) * read * fresh``. What both append later costs the same either way.
    (The closed form of the break-even discussed for prompt caches: restart when
    ``horizon > fresh * (write - read) / (read * (now - fresh))`` and then some.)
    """
    if horizon < 1 or fresh_tokens >= now_tokens:
        return False
    read, write = policy.cache_read_price, policy.cache_write_price
    return write * fresh_tokens + (horizon - 1) * read * fresh_tokens < horizon * read * now_tokens


def break_even_reason(now_tokens: int, fresh_tokens: int, horizon: int) -> str:
    """The restart's reason: the two sizes and the horizon that repays the write."""
    return (f"{BREAK_EVEN} a new epoch of {fresh_tokens} tokens instead of {now_tokens} repays its cache write "
            f"within the {horizon} calls the run is estimated to have left")


def seconds_since(boundary: GenerationBoundary, previous: PreviousAssembly | None) -> int | None:
    """Whole seconds since the participant's previous call; ``None`` when there is none or its time is unknown."""
    if previous is None or previous.generation_at is None:
        return None
    return int((boundary.now - previous.generation_at).total_seconds())


def cold_cache_gap(policy: ContextPolicy, boundary: GenerationBoundary,
                   previous: PreviousAssembly) -> tuple[int, int] | None:
    """``(seconds since the previous call, the route's cache lifetime)`` when the first exceeds the second.

    ``None`` otherwise, and when the route has no lifetime in ``policy.cache_ttl_seconds`` or the previous
    call's time is unknown: a cache is never assumed cold without both.
    """
    ttl = policy.cache_ttl_seconds.get(boundary.provider_route)
    gap = seconds_since(boundary, previous)
    return (gap, ttl) if ttl is not None and gap is not None and gap > ttl else None


def cold_cache_reason(gap: int, ttl: int, now_tokens: int, fresh_tokens: int) -> str:
    """The restart's reason: how late the call is, and the two sizes (either is written to the cache anew)."""
    return (f"{COLD_CACHE} {gap} s since the previous call, past the route's {ttl} s cache lifetime: "
            f"a new epoch of {fresh_tokens} tokens is written instead of {now_tokens}")


LONGER_CACHE = "longer cache:"
"""How the decision that asks for the route's longer cache tier starts."""


def longer_cache_tier(policy: ContextPolicy, boundary: GenerationBoundary,
                      previous: PreviousAssembly | None) -> tuple[int, str] | None:
    """The longer cache lifetime this call should ask for, and why; ``None``: the provider's default.

    A call that came later than the route's cache lifetime after the participant's previous call, but within
    its longer tier, predicts that the next one comes as late: one write at the longer tier's price is then
    cheaper than a short write now and another when the next call finds the entry gone, as long as the longer
    write costs less than two short ones.
    """
    route = boundary.provider_route
    short, long = policy.cache_ttl_seconds.get(route), policy.cache_long_ttl_seconds.get(route)
    gap = seconds_since(boundary, previous)
    if short is None or long is None or gap is None:
        return None
    if not short < gap <= long or policy.cache_long_write_price >= 2 * policy.cache_write_price:
        return None
    return long, (f"{LONGER_CACHE} {long} s entries: this call came {gap} s after the previous one, past the "
                  f"route's {short} s lifetime; if the next comes as late, one write at "
                  f"{policy.cache_long_write_price}x costs less than {policy.cache_write_price}x now and again then")


def with_cache_tier(selection: Selection, previous: PreviousAssembly | None) -> Selection:
    """The selection asking for the longer cache tier when :func:`longer_cache_tier` says so (decision logged)."""
    tier = longer_cache_tier(selection.policy, selection.boundary, previous)
    if tier is None:
        return selection
    seconds, reason = tier
    decision = PolicyDecisionRecord(
        kind="cache", subject_ref=f"epoch:{selection.epoch.epoch_id}", outcome=DecisionOutcome.NOTED,
        reason=reason, policy_version=selection.policy.version_tag,
    )
    return replace(selection, epoch=selection.epoch.model_copy(update={"cache_ttl_seconds": seconds}),
                   decisions=(*selection.decisions, decision))


def in_epoch(selection: Selection, epoch: str, *, started: bool, reason: str) -> Selection:
    """The selection with its epoch named, and the epoch decision logged."""
    record = selection.epoch.model_copy(update={"epoch_id": epoch, "started": started, "reason": reason})
    decision = PolicyDecisionRecord(
        kind="epoch", subject_ref=f"epoch:{epoch}", outcome=DecisionOutcome.NOTED,
        reason=f"started: {reason}" if started else reason, policy_version=selection.policy.version_tag,
    )
    return replace(selection, epoch=record, decisions=(*selection.decisions, decision))


STALE_NOTE = "Runtime note: {line}"
"""After the events: a prefix memory that went stale during the epoch (``epoch_staleness="note"``)."""


def stale_notes(
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


def stale_note_texts(ctx: SelectionContext, noted: Sequence[tuple[str, int]]) -> list[tuple[int, str]]:
    """``(after_seq, text)`` of each staleness note, each decision logged."""
    memories = {memory.id: memory for memory in ctx.candidates.tool_memories}
    notes = []
    for memory_id, after_seq in noted:
        line = stale_marker_line(memories[memory_id], ctx.short, stale_at(memories[memory_id], ctx.policy))
        notes.append((after_seq, STALE_NOTE.format(line=line)))
        ctx.ledger.decide("freshness", f"memory:{memory_id}", DecisionOutcome.MARKED_STALE,
                          "went stale during the epoch: noted after the events (epoch_staleness=note)")
    return notes


__all__ = [
    "BREAK_EVEN",
    "COLD_CACHE",
    "LONGER_CACHE",
    "EPOCH_CONTINUED",
    "STALE_NOTE",
    "EventRecords",
    "cold_cache_gap",
    "cold_cache_reason",
    "continuation_blocker",
    "epoch_id",
    "fresh_boundary",
    "in_epoch",
    "incompatibility",
    "item_key",
    "break_even_reason",
    "latest_own_message",
    "longer_cache_tier",
    "own_model_calls",
    "restart_pays",
    "seconds_since",
    "own_tool_steps",
    "prefix_change",
    "prefix_digest",
    "split_at",
    "stale_note_texts",
    "stale_notes",
    "step_calls",
    "with_cache_tier",
]
