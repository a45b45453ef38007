"""Planned raw bytes that cannot be read are recorded as not shown, never as rehydrated.

Selection plans a first read (the participant's unread result, whole, as its
native tool message) and requested evidence before any byte is read, and logs
them ``rehydrated``. When the bytes are missing or fail their sha256 check,
the context says the raw bytes are unavailable; these tests check that the
decisions and the record say the same thing.
"""

from __future__ import annotations

from collections import Counter

from policy.assembler import render_context, select_context
from policy.enums import DecisionOutcome, OmissionReason
from policy.policy import DEFAULT_POLICY
from policy.rehydration import RAW_HASH_MISMATCH_TEXT, RAW_MISSING_TEXT, unavailable_raw_decisions
from policy_builders import artifact, boundary, candidates, evidence, memory
from test_epochs import Timeline


def _first_read(counter):
    timeline = Timeline(counter)
    timeline.user("check my reservation")
    timeline.call()
    [call] = timeline.step("get_reservation")
    timeline.result(call, b'{"reservation_id":"JG7FMM","flights":["HAT028"]}')
    point = boundary(now=timeline.now)
    selection = select_context(timeline.policy, point, timeline.world(), counter, timeline.previous)
    [planned] = [p for p in selection.rehydration if p.tool_call_id == call.id]
    return selection, call, planned.artifact_id


def test_a_first_read_that_failed_its_hash_is_included_as_its_summary_not_rehydrated(counter):
    selection, call, artifact_id = _first_read(counter)
    [before] = [d for d in selection.decisions if d.kind == "appended" and d.subject_ref == f"tool_call:{call.id}"]
    assert before.outcome is DecisionOutcome.REHYDRATED  # what selection logs, before any byte is read

    unavailable = {artifact_id: RAW_HASH_MISMATCH_TEXT}
    result = render_context(selection, {}, counter, unavailable)
    decisions = result.decisions  # render_context rewrites the planned read's decision itself
    [after] = [d for d in decisions if d.kind == "appended" and d.subject_ref == f"tool_call:{call.id}"]
    assert after.outcome is DecisionOutcome.INCLUDED
    assert after.omission is OmissionReason.RAW_HASH_MISMATCH
    assert RAW_HASH_MISMATCH_TEXT in after.reason and "(summary)" in after.reason
    assert result.record.omitted_counts[OmissionReason.RAW_HASH_MISMATCH.value] == 1
    # What the model got says the same: no raw bytes, and why.
    tool_messages = [m.content for m in result.messages if m.tool_call_id]
    assert any(f"raw bytes unavailable: {RAW_HASH_MISMATCH_TEXT}" in (c or "") for c in tool_messages)
    assert not any("JG7FMM" in (c or "") for c in tool_messages)
    assert result.record.rehydrated_refs == ()
    # Every other decision is untouched, in the same order.
    assert [d for d in decisions if d is not after] == [d for d in selection.decisions if d is not before]


def test_read_bytes_leave_the_decisions_as_they_were(counter):
    selection, _, artifact_id = _first_read(counter)
    result = render_context(selection, {artifact_id: b'{"reservation_id":"JG7FMM","flights":["HAT028"]}'}, counter)
    assert unavailable_raw_decisions(result.decisions, selection.rehydration, {}) == (result.decisions, Counter())


def test_requested_evidence_that_cannot_be_read_is_omitted_with_its_reason(counter):
    world = candidates(artifacts=[artifact("art-csv", 5, b"region,amount\nnorth,10\n")],
                       tool_memories=[memory("mem-csv", 6, sources=["art-csv"])])
    selection = select_context(DEFAULT_POLICY, boundary(evidence_requests=(evidence("art-csv"),)), world, counter)
    assert [p.artifact_id for p in selection.rehydration] == ["art-csv"]
    unavailable = {"art-csv": RAW_MISSING_TEXT}
    result = render_context(selection, {}, counter, unavailable)
    [decision] = [d for d in result.decisions if d.kind == "rehydration"]
    assert (decision.outcome, decision.omission) == (DecisionOutcome.OMITTED, OmissionReason.RAW_MISSING)
    assert RAW_MISSING_TEXT in decision.reason
    assert result.record.omitted_counts[OmissionReason.RAW_MISSING.value] == 1
