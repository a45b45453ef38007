"""Freshness (TTL, explicit stale_after, markers vs omission), supersession and conflicts."""

from __future__ import annotations

from datetime import timedelta

import pytest

from policy.enums import DecisionOutcome, FreshnessClass, OmissionReason, VisibilityScope
from policy.gates import is_stale, stale_at
from policy.policy import DEFAULT_POLICY, ContextPolicy
from policy_builders import (
    NOW,
    OTHER,
    SIBLING,
    artifact,
    boundary,
    candidates,
    decisions_for,
    memory,
    omission_of,
    outcome_of,
    selected,
    system_text,
    tool_call,
)

F = FreshnessClass
MIN, HOUR, DAY = timedelta(minutes=1), timedelta(hours=1), timedelta(days=1)

STALENESS_TABLE = [
    # (case, freshness, observed age, explicit stale_after relative to NOW, stale)
    ("volatile, fresh", F.VOLATILE, 14 * MIN, None, False),
    ("volatile, exactly at ttl", F.VOLATILE, 15 * MIN, None, True),
    ("volatile, past ttl", F.VOLATILE, 16 * MIN, None, True),
    ("session, fresh", F.SESSION, 11 * HOUR, None, False),
    ("session, past ttl", F.SESSION, 13 * HOUR, None, True),
    ("bounded, fresh", F.BOUNDED, 23 * HOUR, None, False),
    ("bounded, past ttl", F.BOUNDED, 25 * HOUR, None, True),
    ("durable, fresh", F.DURABLE, 29 * DAY, None, False),
    ("durable, past ttl", F.DURABLE, 31 * DAY, None, True),
    ("permanent, ten years old", F.PERMANENT, 3650 * DAY, None, False),
    ("volatile, explicit later stale_after wins", F.VOLATILE, 2 * HOUR, HOUR, False),
    ("durable, explicit earlier stale_after wins", F.DURABLE, 2 * MIN, -MIN, True),
    ("session, explicit stale_after exactly now", F.SESSION, MIN, timedelta(0), True),
    ("observed in the future", F.VOLATILE, -HOUR, None, False),
]


@pytest.mark.parametrize(
    ("freshness", "age", "stale_after", "stale"),
    [row[1:] for row in STALENESS_TABLE],
    ids=[row[0] for row in STALENESS_TABLE],
)
def test_is_stale(freshness, age, stale_after, stale):
    record = memory("m", 20, freshness=freshness, observed_at=NOW - age,
                    stale_after=None if stale_after is None else NOW + stale_after)
    assert is_stale(record, DEFAULT_POLICY, NOW) is stale


def test_stale_at_uses_policy_ttl_and_explicit_override():
    observed = NOW - HOUR
    assert stale_at(memory("m", 1, freshness=F.VOLATILE, observed_at=observed), DEFAULT_POLICY) == observed + 15 * MIN
    assert stale_at(memory("m", 1, freshness=F.PERMANENT, observed_at=observed), DEFAULT_POLICY) is None
    explicit = NOW + DAY
    assert stale_at(memory("m", 1, freshness=F.VOLATILE, observed_at=observed, stale_after=explicit),
                    DEFAULT_POLICY) == explicit
    custom = ContextPolicy(freshness_ttl={**DEFAULT_POLICY.freshness_ttl, F.VOLATILE: 2 * HOUR})
    assert stale_at(memory("m", 1, freshness=F.VOLATILE, observed_at=observed), custom) == observed + 2 * HOUR
    no_ttl = ContextPolicy(freshness_ttl={**DEFAULT_POLICY.freshness_ttl, F.SESSION: None})
    assert stale_at(memory("m", 1, freshness=F.SESSION, observed_at=observed), no_ttl) is None


def _inbox(**overrides):
    fields = dict(
        freshness=F.VOLATILE,
        observed_at=NOW - 20 * MIN,
        title="gmail_search(query=is:unread)",
        summary="gmail_search(query=is:unread) → 3 unread: alice@example.com, bob@example.com",
        source_tool="gmail_search",
        revalidate_with=("gmail_search",),
    )
    fields.update(overrides)
    return memory("mem-inbox", 20, **fields)


def test_stale_memory_renders_as_marker_without_values(run):
    result = run(candidates(tool_memories=[_inbox()]))
    text = system_text(result)
    assert "Stale (not current truth; revalidate before use):" in text
    assert "[m:meminbox] STALE since 2026-03-01T11:55Z: gmail_search(query=is:unread)" in text
    assert "(observed 2026-03-01T11:40Z); re-run gmail_search" in text
    assert "alice@example.com" not in text and "3 unread" not in text
    assert outcome_of(result, "memory:mem-inbox") is DecisionOutcome.MARKED_STALE
    assert selected(result, "memory:mem-inbox")
    assert "Tool results (compact" not in text


def test_stale_marker_lists_every_revalidation_tool(run):
    result = run(candidates(tool_memories=[_inbox(revalidate_with=("gmail_list", "gmail_get"))]))
    assert "re-run gmail_list, gmail_get" in system_text(result)


def test_stale_marker_falls_back_to_source_tool(run):
    result = run(candidates(tool_memories=[_inbox(revalidate_with=())]))
    assert "re-run gmail_search" in system_text(result)


def test_stale_handling_omit_drops_stale_memories(run):
    policy = ContextPolicy(stale_handling="omit")
    result = run(candidates(tool_memories=[_inbox(), memory("mem-fresh", 21)]), policy=policy)
    assert omission_of(result, "memory:mem-inbox") is OmissionReason.STALE
    assert [d.kind for d in decisions_for(result, "memory:mem-inbox")] == ["freshness"]
    assert not selected(result, "memory:mem-inbox")
    assert selected(result, "memory:mem-fresh")
    assert "gmail_search" not in system_text(result)
    assert result.record.omitted_counts[OmissionReason.STALE.value] == 1


def test_stale_handling_rejects_unknown_modes():
    with pytest.raises(ValueError):
        ContextPolicy(stale_handling="hide")


def test_explicit_stale_after_keeps_an_old_volatile_memory_current(run):
    result = run(candidates(tool_memories=[_inbox(observed_at=NOW - DAY, stale_after=NOW + HOUR)]))
    assert "3 unread" in system_text(result)
    assert outcome_of(result, "memory:mem-inbox") is DecisionOutcome.INCLUDED


def test_permanent_memory_never_goes_stale(run):
    handle = memory("mem-file", 20, freshness=F.PERMANENT, observed_at=NOW - 5000 * DAY,
                    summary="generated file report.pdf, 2048 bytes")
    result = run(candidates(tool_memories=[handle]))
    assert "generated file report.pdf, 2048 bytes" in system_text(result)
    assert "STALE" not in system_text(result)


# --------------------------------------------------------------------------- supersession


def test_superseded_memory_is_omitted_and_replacement_kept(run):
    old = memory("mem-old", 20, summary="balance 100", superseded_by="mem-new", subject_key="bank:acct")
    new = memory("mem-new", 30, summary="balance 250", supersedes=("mem-old",), subject_key="bank:acct")
    result = run(candidates(tool_memories=[old, new]))
    assert omission_of(result, "memory:mem-old") is OmissionReason.SUPERSEDED
    [decision] = decisions_for(result, "memory:mem-old")
    assert decision.kind == "supersession" and "mem-new" in decision.reason
    assert selected(result, "memory:mem-new")
    text = system_text(result)
    assert "balance 250" in text and "balance 100" not in text


def test_supersession_chain_keeps_only_the_newest(run):
    chain = [
        memory("mem-a", 20, summary="v1", superseded_by="mem-b"),
        memory("mem-b", 21, summary="v2", superseded_by="mem-c"),
        memory("mem-c", 22, summary="v3"),
    ]
    result = run(candidates(tool_memories=chain))
    assert [selected(result, f"memory:mem-{x}") for x in "abc"] == [False, False, True]


@pytest.mark.parametrize(
    ("case", "replacement"),
    [
        ("on a sibling branch", dict(branch=SIBLING, seq=12)),
        ("private to another participant", dict(owner=OTHER, visibility=VisibilityScope.PARTICIPANT_PRIVATE)),
        ("not in the candidate set", None),
    ],
)
def test_superseded_by_a_memory_the_viewer_cannot_see_is_kept(run, case, replacement):
    """Supersession is about what this viewer knows: an invisible replacement replaces nothing."""
    old = memory("mem-old", 5, summary="balance 100", superseded_by="mem-new")
    records = [old]
    if replacement is not None:
        fields = dict(seq=30, summary="balance 250")
        fields.update(replacement)
        records.append(memory("mem-new", fields.pop("seq"), **fields))
    result = run(candidates(tool_memories=records))
    assert selected(result, "memory:mem-old"), case
    assert "balance 100" in system_text(result)
    assert "balance 250" not in system_text(result)


def test_conflicting_memories_are_both_kept_with_a_note(run):
    a = memory("mem-a1", 20, summary="ticket T-9 status=open", conflicts_with=("mem-b2",))
    b = memory("mem-b2", 21, summary="ticket T-9 status=closed")
    result = run(candidates(tool_memories=[a, b]))
    assert selected(result, "memory:mem-a1") and selected(result, "memory:mem-b2")
    text = system_text(result)
    assert "[m:mema1] ticket T-9 status=open CONFLICTS with m:memb2" in text
    assert "[m:memb2] ticket T-9 status=closed" in text


def test_conflict_note_needs_the_other_side_admitted(run):
    a = memory("mem-a1", 20, summary="ticket T-9 status=open", conflicts_with=("mem-b2", "mem-gone"))
    b = memory("mem-b2", 12, branch=SIBLING, summary="ticket T-9 status=closed")
    result = run(candidates(tool_memories=[a, b]))
    assert omission_of(result, "memory:mem-b2") is OmissionReason.OUTSIDE_LINEAGE
    assert "CONFLICTS" not in system_text(result)


def test_conflicting_memory_outranks_plain_memories_under_budget(run):
    """A conflicted memory (tier 0) is kept before an unconflicted one when only one fits."""
    a = memory("mem-a1", 20, summary="x " * 40, conflicts_with=("mem-b2",))
    b = memory("mem-b2", 21, summary="y " * 40)
    world = candidates(tool_memories=[a, b])
    full = run(world)
    # Budget for the system prompt and roughly one memory line.
    budget = full.record.assembled_tokens - 30
    result = run(world, boundary(token_budget=budget))
    assert selected(result, "memory:mem-a1")
    assert omission_of(result, "memory:mem-b2") is OmissionReason.BUDGET


def test_succeeded_call_covered_by_a_stale_memory_is_still_resolved_elsewhere(run):
    call = tool_call("tc-1", 19, "succeeded", name="gmail_search")
    world = candidates(
        tool_calls=[call],
        artifacts=[artifact("art-1", 19, call=call)],
        tool_memories=[_inbox(source_tool="gmail_search", sources=("art-1",))],
    )
    result = run(world)
    assert omission_of(result, "tool_call:tc-1") is OmissionReason.RESOLVED_ELSEWHERE
