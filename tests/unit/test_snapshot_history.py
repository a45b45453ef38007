"""Rows rewritten in place read back as of a snapshot from the history they carry (store.convert)."""

from __future__ import annotations

import pytest

from policy.enums import PrivacyClass, ResolutionStatus, VisibilityScope
from store.convert import resolution_at, skill_state_at
from store.models import SkillState, ToolMemory


def _memory(resolution: str, history: list[dict]) -> ToolMemory:
    return ToolMemory(id="m-1", resolution=resolution, resolution_history=history)


@pytest.mark.parametrize(
    ("snapshot", "expected"),
    [
        (5, ResolutionStatus.RESOLVED),  # before the first change
        (10, ResolutionStatus.MISSING_SOURCE),  # the first change took seq 10
        (19, ResolutionStatus.MISSING_SOURCE),
        (20, ResolutionStatus.REPAIRED),  # the second one, seq 20
        (99, ResolutionStatus.REPAIRED),
    ],
)
def test_a_resolution_reads_as_it_was_at_the_snapshot(snapshot: int, expected: ResolutionStatus) -> None:
    memory = _memory(ResolutionStatus.REPAIRED.value, [
        {"seq": 10, "replaced": ResolutionStatus.RESOLVED.value},
        {"seq": 20, "replaced": ResolutionStatus.MISSING_SOURCE.value},
    ])
    assert resolution_at(memory, snapshot) == expected.value


def test_a_resolution_never_changed_is_the_current_one() -> None:
    assert resolution_at(_memory(ResolutionStatus.HASH_MISMATCH.value, []), 1) == ResolutionStatus.HASH_MISMATCH.value


def _skill(seq: int, state: dict, history: list[dict]) -> SkillState:
    return SkillState(id="s-1", branch_id="b-1", seq=seq, participant_id="p-1", skill="report", state=state,
                      active=True, visibility=VisibilityScope.PARTICIPANT_PRIVATE.value,
                      privacy=PrivacyClass.USER.value, history=history)


def _version(seq: int, step: str, active: bool = True) -> dict:
    return {"seq": seq, "state": {"step": step}, "active": active,
            "visibility": VisibilityScope.PARTICIPANT_PRIVATE.value, "privacy": PrivacyClass.USER.value}


@pytest.mark.parametrize(
    ("snapshot", "expected"),
    [(4, None), (5, ("gather", 5, False)), (11, ("draft", 11, True)), (29, ("draft", 11, True)),
     (30, ("write", 30, True))],
)
def test_a_skill_state_reads_as_the_version_current_at_the_snapshot(snapshot: int, expected) -> None:
    row = _skill(30, {"step": "write"}, [_version(5, "gather", active=False), _version(11, "draft")])
    state = skill_state_at(row, snapshot)
    if expected is None:
        assert state is None, "no state was written by then"
    else:
        assert (state.state["step"], state.seq, state.active) == expected
        assert state.id == "s-1"
