"""The policy core's errors: what it refuses to do, and with which exception."""

from __future__ import annotations

import pytest

from policy.assembler import render_context, select_context
from policy.errors import BoundaryMismatchError, DerivationError, PolicyError, UnknownParticipantError
from policy.policy import DEFAULT_POLICY
from policy.records import Locator
from policy.rehydration import slice_payload
from policy_builders import ACTIVE, ROOT, SIBLING, artifact, boundary, candidates, evidence, lineage, memory

WORLD = candidates(artifacts=[artifact("art-1", 20, b"a\nb\n")], tool_memories=[memory("mem-1", 21, sources=["art-1"])])

SELECT_ERRORS = [
    # (case, boundary overrides, candidates, exception)
    ("participant not in the conversation", {"participant_id": "p-stranger"}, WORLD, UnknownParticipantError),
    ("boundary on a sibling branch", {"branch_id": SIBLING}, WORLD, BoundaryMismatchError),
    ("boundary on the parent branch", {"branch_id": ROOT}, WORLD, BoundaryMismatchError),
    ("candidates loaded for another lineage", {},
     candidates(lineage=lineage((ROOT, 10), (SIBLING, None))), BoundaryMismatchError),
]


@pytest.mark.parametrize(("overrides", "world", "error"), [r[1:] for r in SELECT_ERRORS],
                         ids=[r[0] for r in SELECT_ERRORS])
def test_select_context_errors(counter, overrides, world, error):
    with pytest.raises(error):
        select_context(DEFAULT_POLICY, boundary(**overrides), world, counter)


def test_branch_is_checked_before_participant(counter):
    with pytest.raises(BoundaryMismatchError):
        select_context(DEFAULT_POLICY, boundary(branch_id=SIBLING, participant_id="p-stranger"), WORLD, counter)


RENDER_ERRORS = [
    # (case, evidence request, payloads)
    ("planned bytes missing", evidence("art-1"), {}),
    ("bytes for another artifact only", evidence("art-1"), {"art-2": b"x"}),
    ("lines past the end", evidence("art-1", "lines", 3, 4), {"art-1": b"a\nb\n"}),
    ("pointer into non-JSON", evidence("art-1", "json_pointer", pointer="/a"), {"art-1": b"a\nb\n"}),
]


@pytest.mark.parametrize(("request_", "payloads"), [r[1:] for r in RENDER_ERRORS], ids=[r[0] for r in RENDER_ERRORS])
def test_render_context_errors(counter, request_, payloads):
    selection = select_context(DEFAULT_POLICY, boundary(evidence_requests=(request_,)), WORLD, counter)
    assert selection.rehydration, "the request must have been planned"
    with pytest.raises(DerivationError):
        render_context(selection, payloads, counter)


def test_unknown_locator_kind_is_rejected_by_the_record():
    with pytest.raises(ValueError):
        Locator(artifact_id="a", kind="bytes")  # type: ignore[arg-type]


def test_slice_rejects_a_locator_kind_it_cannot_read():
    locator = Locator.model_construct(artifact_id="a", kind="bytes", start=None, end=None, pointer=None)
    with pytest.raises(DerivationError, match="unknown locator kind"):
        slice_payload(b"x", locator)


@pytest.mark.parametrize("error", [UnknownParticipantError, BoundaryMismatchError, DerivationError])
def test_every_error_is_a_policy_error(error):
    assert issubclass(error, PolicyError)


def test_records_are_frozen_and_strict():
    record = memory("m", 1)
    with pytest.raises(ValueError):
        record.summary = "changed"  # type: ignore[misc]
    with pytest.raises(ValueError):
        boundary(unexpected_field=1)
    assert ACTIVE == boundary().branch_id
