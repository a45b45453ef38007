"""policy.recall: the gates a model's recall of raw evidence passes (pure, no I/O)."""

from __future__ import annotations

import pytest

from policy.enums import DecisionOutcome, OmissionReason, PrivacyClass, VisibilityScope
from policy.gates import Viewer
from policy.policy import DEFAULT_POLICY
from policy.recall import (
    NOT_FOUND_ANSWER,
    RecallLocatorError,
    parse_locator,
    plan_recall,
    refuse_locator,
    resolve,
    settle_recall,
)
from tests.unit.policy.policy_builders import (
    OTHER,
    SIBLING,
    VIEWER,
    artifact,
    candidates,
    lineage,
    memory,
)

ART = "3f2a91c0-1111-4aaa-8bbb-000000000001"
MEM = "7c1d2e3f-2222-4aaa-8bbb-000000000002"
PRIVATE = "9a9a9a9a-3333-4aaa-8bbb-000000000003"
SIB = "5b5b5b5b-4444-4aaa-8bbb-000000000004"
GOOGLE = "6c6c6c6c-5555-4aaa-8bbb-000000000005"
BIG = "8d8d8d8d-6666-4aaa-8bbb-000000000006"


def _world():
    return candidates(
        artifacts=[
            artifact(ART, 20, b"a,b\n1,2\n3,4\n", content_type="text/csv"),
            artifact(PRIVATE, 21, owner=OTHER, visibility=VisibilityScope.PARTICIPANT_PRIVATE),
            artifact(SIB, 22, branch=SIBLING),
            artifact(GOOGLE, 23, privacy=PrivacyClass.GOOGLE_DERIVED),
            artifact(BIG, 24, b"x" * 5000),
        ],
        tool_memories=[memory(MEM, 25, sources=[ART])],
    )


def _viewer(route: str = "local", participant: str = VIEWER) -> Viewer:
    found = DEFAULT_POLICY.route(route)
    assert found is not None
    return Viewer(participant, lineage(), found)


def _plan(ref: str, locator=None, *, route: str = "local", spent: int = 0, participant: str = VIEWER):
    return plan_recall(DEFAULT_POLICY, _viewer(route, participant), _world(), ref, locator, spent)


@pytest.mark.parametrize("ref", [ART, f"a:{ART.replace('-', '')[:8]}", f"[a:{ART[:8]}]",
                                 f"m:{MEM.replace('-', '')[:8]}", MEM, f"tc-{ART}", f"call_tc-{ART}"])
def test_an_id_the_model_was_shown_resolves_to_its_artifact(ref):
    decision = _plan(ref)
    assert decision.allowed and decision.artifact_id == ART
    assert decision.decision.outcome is DecisionOutcome.REHYDRATED
    assert decision.decision.kind == "recall"
    assert decision.decision.policy_version == DEFAULT_POLICY.version_tag


@pytest.mark.parametrize("ref", [
    "nope", "a:00000000", PRIVATE, f"a:{PRIVATE[:8]}", SIB, f"a:{SIB[:8]}", "a:3f2", "",
])
def test_unknown_short_private_and_sibling_ids_get_one_answer(ref):
    """No existence leak: another participant's private record and a sibling branch's read as unknown."""
    decision = _plan(ref)
    assert not decision.allowed
    assert decision.answer == NOT_FOUND_ANSWER
    assert decision.decision.outcome is DecisionOutcome.DENIED


def test_the_owner_of_a_private_artifact_may_recall_it():
    decision = _plan(PRIVATE, participant=OTHER)
    assert decision.allowed and decision.artifact_id == PRIVATE


def test_raw_privacy_the_route_may_not_receive_is_denied():
    decision = _plan(GOOGLE, route="openai")
    assert not decision.allowed
    assert decision.decision.omission is OmissionReason.RAW_PRIVACY
    assert "summary" in decision.answer
    assert _plan(GOOGLE, route="local").allowed


def test_a_class_the_route_may_not_see_at_all_reads_as_unknown():
    decision = _plan(ART, route="public-only")
    assert decision.answer == NOT_FOUND_ANSWER
    assert decision.decision.omission is OmissionReason.PRIVACY_ROUTE


def test_a_whole_artifact_over_the_item_cap_is_denied_not_truncated():
    decision = _plan(BIG)
    assert not decision.allowed
    assert decision.decision.omission is OmissionReason.RAW_BYTE_BUDGET
    assert "5000 bytes" in decision.answer and "locator" in decision.answer
    sliced = _plan(BIG, {"kind": "lines", "start": 1, "end": 1})
    assert sliced.allowed and sliced.max_bytes == DEFAULT_POLICY.rehydration_item_bytes


def test_the_run_budget_counts_what_earlier_recalls_served():
    total = DEFAULT_POLICY.rehydration_total_bytes
    assert _plan(ART, spent=total - 100).max_bytes == 100
    spent = _plan(ART, spent=total)
    assert not spent.allowed and spent.decision.omission is OmissionReason.RAW_BYTE_BUDGET


def test_settle_denies_a_slice_over_its_cap_and_records_the_size():
    planned = _plan(ART, {"kind": "rows", "start": 1, "end": 2}, spent=DEFAULT_POLICY.rehydration_total_bytes - 10)
    assert not settle_recall(DEFAULT_POLICY, planned, "x" * 11).allowed
    settled = settle_recall(DEFAULT_POLICY, planned, "x" * 10)
    assert settled.allowed and "10 of at most 10 bytes" in settled.decision.reason


def test_a_locator_that_does_not_fit_is_recorded_as_denied():
    planned = _plan(ART, {"kind": "rows", "start": 5, "end": 9})
    refused = refuse_locator(DEFAULT_POLICY, planned, "rows 5-9 outside payload of 2 rows")
    assert not refused.allowed and refused.answer.startswith("rows 5-9")


@pytest.mark.parametrize("raw, kind", [
    ({"kind": "rows", "start": 2, "end": 3}, "rows"),
    ({"kind": "lines", "start": 1, "end": 1}, "lines"),
    ({"kind": "json_pointer", "pointer": "/a/0"}, "json_pointer"),
    ({"kind": "json_pointer", "pointer": ""}, "json_pointer"),
])
def test_locators_parse(raw, kind):
    locator = parse_locator(ART, raw)
    assert locator is not None and locator.kind == kind and locator.artifact_id == ART


@pytest.mark.parametrize("raw", [
    {"kind": "cells"}, {"kind": "rows", "start": 1}, {"kind": "rows", "start": 0, "end": 2},
    {"kind": "lines", "start": 3, "end": 2}, {"kind": "lines", "start": True, "end": 2},
    {"kind": "json_pointer", "pointer": "a/0"}, {"kind": "json_pointer"},
])
def test_bad_locators_are_typed_errors(raw):
    with pytest.raises(RecallLocatorError):
        parse_locator(ART, raw)


def test_whole_and_none_mean_the_whole_artifact():
    assert parse_locator(ART, None) is None
    assert parse_locator(ART, {"kind": "whole"}) is None


def test_a_shared_prefix_resolves_to_nothing():
    twins = candidates(artifacts=[artifact("abcdef12-0000-0000-0000-000000000001", 1),
                                  artifact("abcdef12-0000-0000-0000-000000000002", 2)])
    assert resolve("a:abcdef12", twins) is None
    assert resolve("abcdef12-0000-0000-0000-000000000002", twins) is not None


def test_plan_is_deterministic():
    assert _plan(f"m:{MEM[:8]}") == _plan(f"m:{MEM[:8]}")


@pytest.mark.parametrize("mismatch, omission", [(False, OmissionReason.RAW_MISSING),
                                                (True, OmissionReason.RAW_HASH_MISMATCH)])
def test_unreadable_bytes_are_denied_with_why(mismatch, omission):
    from policy.recall import unavailable_evidence

    denied = unavailable_evidence(DEFAULT_POLICY, _plan(ART), mismatch)
    assert not denied.allowed and denied.decision.omission is omission and "unavailable" in denied.answer
