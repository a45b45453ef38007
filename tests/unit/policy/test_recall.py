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


# --------------------------------------------------------------------------- transcript messages

MSG = "4e4e4e4e-7777-4aaa-8bbb-000000000007"
MSG_SIB = "2f2f2f2f-8888-4aaa-8bbb-000000000008"
MSG_PRIVATE = "1a1a1a1a-9999-4aaa-8bbb-000000000009"
MSG_GOOGLE = "0b0b0b0b-aaaa-4aaa-8bbb-00000000000a"


def _talk():
    from policy_builders import message

    return candidates(
        artifacts=[artifact(ART, 20, b"a,b\n1,2\n")],
        messages=[
            message(MSG, 5, "user", "the task\nline two: keep `foo()` as is\nline three"),
            message(MSG_SIB, 6, "user", "sibling words", branch=SIBLING),
            message(MSG_PRIVATE, 7, "assistant", "a scratch note", author=OTHER,
                    visibility=VisibilityScope.PARTICIPANT_PRIVATE),
            message(MSG_GOOGLE, 8, "assistant", "from a mailbox", privacy=PrivacyClass.GOOGLE_DERIVED),
        ],
    )


def _plan_message(ref: str, locator=None, *, route: str = "local", spent: int = 0, participant: str = VIEWER):
    return plan_recall(DEFAULT_POLICY, _viewer(route, participant), _talk(), ref, locator, spent)


@pytest.mark.parametrize("ref", [f"msg:{MSG.replace('-', '')[:8]}", f"[msg:{MSG[:8]}]", MSG, f"msg:{MSG}"])
def test_a_message_the_summary_lists_is_recalled_by_its_msg_id(ref):
    decision = _plan_message(ref)
    assert decision.allowed and decision.message_id == MSG and decision.artifact_id is None
    assert decision.decision.subject_ref == f"message:{MSG}"
    assert decision.decision.outcome is DecisionOutcome.REHYDRATED


def test_a_bare_prefix_never_names_a_message():
    """Only ``msg:`` prefixes reach messages: ``m:``, ``a:`` and bare prefixes keep meaning what they meant."""
    assert _plan_message(MSG[:8]).answer == NOT_FOUND_ANSWER
    assert _plan_message(f"m:{MSG[:8]}").answer == NOT_FOUND_ANSWER
    assert not _plan_message(f"msg:{ART[:8]}").allowed


@pytest.mark.parametrize("ref, participant, route", [
    (MSG_SIB, VIEWER, "local"),            # another branch
    (MSG_PRIVATE, VIEWER, "local"),        # another participant's private message
    (MSG_GOOGLE, VIEWER, "public-only"),   # a class the route may not receive
    (MSG, VIEWER, "public-only"),
    (f"msg:{MSG_SIB[:8]}", VIEWER, "local"),
])
def test_a_message_the_viewer_may_not_see_reads_as_unknown(ref, participant, route):
    decision = _plan_message(ref, participant=participant, route=route)
    assert not decision.allowed and decision.answer == NOT_FOUND_ANSWER and decision.message_id is None


def test_the_author_of_a_private_message_may_recall_it():
    assert _plan_message(MSG_PRIVATE, participant=OTHER).allowed


def test_a_message_passes_the_gates_the_transcript_shows_it_by():
    """A route that receives a class in the transcript receives the message's text through recall too."""
    assert _plan_message(MSG_GOOGLE, route="openai").allowed


def test_a_message_takes_whole_or_lines_and_the_same_byte_budget():
    lines = _plan_message(f"msg:{MSG[:8]}", {"kind": "lines", "start": 2, "end": 2})
    assert lines.allowed and lines.locator is not None and lines.locator.artifact_id == MSG
    settled = settle_recall(DEFAULT_POLICY, lines, "line two: keep `foo()` as is")
    assert settled.allowed and settled.decision.subject_ref == f"message:{MSG}"
    with pytest.raises(RecallLocatorError, match="a message is text"):
        _plan_message(MSG, {"kind": "rows", "start": 1, "end": 1})
    spent = _plan_message(MSG, spent=DEFAULT_POLICY.rehydration_total_bytes)
    assert not spent.allowed and spent.decision.omission is OmissionReason.RAW_BYTE_BUDGET
    tight = _plan_message(MSG, spent=DEFAULT_POLICY.rehydration_total_bytes - 5)
    assert not tight.allowed and "over the 5 bytes" in tight.answer
    over = settle_recall(DEFAULT_POLICY, lines.model_copy(update={"max_bytes": 3}), "line two")
    assert not over.allowed and over.decision.subject_ref == f"message:{MSG}"
