"""Admission gates: lineage, visibility and promotion, for every record type that is gated."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from policy.enums import OmissionReason, PromotionPolicy, ToolCallStatus, VisibilityScope
from policy.gates import Viewer, admit
from policy.policy import DEFAULT_POLICY
from policy_builders import (
    ACTIVE,
    CHILD,
    FORK_SEQ,
    OTHER,
    ROOT,
    SIBLING,
    VIEWER,
    boundary,
    candidates,
    checkpoint,
    lineage,
    memory,
    message,
    omission_of,
    selected,
    skill,
    system_text,
    tool_call,
)
from policy.summarise import BRIEF_KEY

# Each kind: (candidate group, ref prefix, builder(id, seq, branch, owner, visibility, shared_with, **kw)).
KINDS: dict[str, tuple[str, str, Callable[..., Any]]] = {
    "memory": (
        "tool_memories",
        "memory",
        lambda id, seq, branch, owner, visibility, shared, **kw: memory(
            id, seq, branch=branch, owner=owner, visibility=visibility, shared_with=shared, **kw
        ),
    ),
    "tool_call": (
        "tool_calls",
        "tool_call",
        lambda id, seq, branch, owner, visibility, shared, **kw: tool_call(
            id, seq, ToolCallStatus.PENDING, branch=branch, participant=owner, visibility=visibility,
            shared_with=shared, **kw
        ),
    ),
    "message": (
        "messages",
        "message",
        lambda id, seq, branch, owner, visibility, shared, **kw: message(
            id, seq, "assistant", branch=branch, author=owner, visibility=visibility, shared_with=shared
        ),
    ),
    "checkpoint": (
        "checkpoints",
        "checkpoint",
        lambda id, seq, branch, owner, visibility, shared, **kw: checkpoint(
            id, seq, branch=branch, participant=owner, visibility=visibility
        ),
    ),
    "skill": (
        "skill_states",
        "skill",
        lambda id, seq, branch, owner, visibility, shared, **kw: skill(
            id, seq, branch=branch, participant=owner, visibility=visibility
        ),
    ),
}
UNSHAREABLE = {"checkpoint", "skill"}
"""Record types without ``shared_with``: share-dependent rows do not apply to them."""


def _cases(table: list[tuple], shared_index: int) -> list:
    """Cross every kind with every table row that applies to it."""
    return [
        pytest.param(kind, *row[1:], id=f"{row[0]}-{kind}")
        for row in table
        for kind in sorted(KINDS)
        if not (row[shared_index] and kind in UNSHAREABLE)
    ]


def _admission(run, kind: str, *, branch: str, seq: int, owner: str = VIEWER,
               visibility: VisibilityScope = VisibilityScope.BRANCH, shared: tuple[str, ...] = (),
               viewer: str = VIEWER, **extra: Any) -> tuple[bool, OmissionReason | None]:
    group, prefix, build = KINDS[kind]
    record = build("rec-1", seq, branch, owner, visibility, shared, **extra)
    # A later user message keeps the transcript non-empty and never competes with the subject.
    anchor = message("msg-anchor", 900, "user", "what now?")
    groups: dict[str, list[Any]] = {"messages": [anchor]}
    groups.setdefault(group, []).append(record)
    result = run(candidates(**groups), boundary(participant_id=viewer))
    ref = f"{prefix}:rec-1"
    return selected(result, ref), omission_of(result, ref)


LINEAGE_TABLE = [
    # (case, branch, seq, visibility, shared_with, admitted, omission)
    ("root before fork", ROOT, 5, VisibilityScope.BRANCH, (), True, None),
    ("root at fork point", ROOT, FORK_SEQ, VisibilityScope.BRANCH, (), True, None),
    ("root after fork", ROOT, FORK_SEQ + 1, VisibilityScope.BRANCH, (), False, OmissionReason.OUTSIDE_LINEAGE),
    ("active branch", ACTIVE, 50, VisibilityScope.BRANCH, (), True, None),
    ("sibling branch", SIBLING, 12, VisibilityScope.BRANCH, (), False, OmissionReason.OUTSIDE_LINEAGE),
    ("unknown branch", "br-elsewhere", 3, VisibilityScope.BRANCH, (), False, OmissionReason.OUTSIDE_LINEAGE),
    ("sibling, conversation scope", SIBLING, 12, VisibilityScope.CONVERSATION, (), True, None),
    ("root after fork, conversation scope", ROOT, 40, VisibilityScope.CONVERSATION, (), True, None),
    ("sibling, shared with viewer", SIBLING, 12, VisibilityScope.BRANCH, (VIEWER,), True, None),
    ("sibling, shared with someone else", SIBLING, 12, VisibilityScope.BRANCH, (OTHER,), False,
     OmissionReason.OUTSIDE_LINEAGE),
    ("sibling, private, own", SIBLING, 12, VisibilityScope.PARTICIPANT_PRIVATE, (), False,
     OmissionReason.OUTSIDE_LINEAGE),
]


@pytest.mark.parametrize(
    ("kind", "branch", "seq", "visibility", "shared", "admitted", "omission"), _cases(LINEAGE_TABLE, 4)
)
def test_lineage(run, kind, branch, seq, visibility, shared, admitted, omission):
    assert _admission(run, kind, branch=branch, seq=seq, visibility=visibility, shared=shared) == (
        admitted,
        omission,
    )


VISIBILITY_TABLE = [
    # (case, owner, visibility, shared_with, admitted, omission)
    ("own private", VIEWER, VisibilityScope.PARTICIPANT_PRIVATE, (), True, None),
    ("other's private", OTHER, VisibilityScope.PARTICIPANT_PRIVATE, (), False, OmissionReason.NOT_VISIBLE),
    ("other's private shared with viewer", OTHER, VisibilityScope.PARTICIPANT_PRIVATE, (VIEWER,), True, None),
    ("other's private shared with a third", OTHER, VisibilityScope.PARTICIPANT_PRIVATE, (CHILD,), False,
     OmissionReason.NOT_VISIBLE),
    ("other's branch-scoped", OTHER, VisibilityScope.BRANCH, (), True, None),
    ("other's conversation-scoped", OTHER, VisibilityScope.CONVERSATION, (), True, None),
    ("own audit-only", VIEWER, VisibilityScope.AUDIT_ONLY, (), False, OmissionReason.AUDIT_ONLY),
    ("other's audit-only", OTHER, VisibilityScope.AUDIT_ONLY, (), False, OmissionReason.AUDIT_ONLY),
    ("audit-only shared with viewer", OTHER, VisibilityScope.AUDIT_ONLY, (VIEWER,), False,
     OmissionReason.AUDIT_ONLY),
]


@pytest.mark.parametrize(
    ("kind", "owner", "visibility", "shared", "admitted", "omission"), _cases(VISIBILITY_TABLE, 3)
)
def test_visibility(run, kind, owner, visibility, shared, admitted, omission):
    assert _admission(run, kind, branch=ACTIVE, seq=50, owner=owner, visibility=visibility, shared=shared) == (
        admitted,
        omission,
    )


def test_audit_only_never_appears_in_rendered_context(run):
    secret = "AUDIT-ONLY-PAYLOAD-7731"
    records = candidates(
        tool_memories=[memory("m-audit", 20, summary=secret, visibility=VisibilityScope.AUDIT_ONLY)],
        messages=[
            message("u-audit", 21, "user", secret, visibility=VisibilityScope.AUDIT_ONLY),
            message("u-1", 22, "user", "hello"),
        ],
    )
    result = run(records)
    assert secret not in "".join(m.content or "" for m in result.messages)
    assert result.record.omitted_counts[OmissionReason.AUDIT_ONLY.value] == 2


PROMOTION_TABLE = [
    # (case, promotion, owner, visibility, viewer, admitted, omission)
    ("on-completion child record, parent", PromotionPolicy.ON_COMPLETION, CHILD, VisibilityScope.BRANCH, VIEWER,
     False, OmissionReason.NOT_PROMOTED),
    ("never-promoted child record, parent", PromotionPolicy.NEVER, CHILD, VisibilityScope.BRANCH, VIEWER,
     False, OmissionReason.NOT_PROMOTED),
    ("on-completion, conversation scope, parent", PromotionPolicy.ON_COMPLETION, CHILD,
     VisibilityScope.CONVERSATION, VIEWER, False, OmissionReason.NOT_PROMOTED),
    ("on-completion, private, parent", PromotionPolicy.ON_COMPLETION, CHILD, VisibilityScope.PARTICIPANT_PRIVATE,
     VIEWER, False, OmissionReason.NOT_VISIBLE),
    ("on-completion child record, child owner", PromotionPolicy.ON_COMPLETION, CHILD, VisibilityScope.BRANCH, CHILD,
     True, None),
    ("never-promoted child record, child owner", PromotionPolicy.NEVER, CHILD, VisibilityScope.BRANCH, CHILD,
     True, None),
    ("private child record, child owner", PromotionPolicy.ON_COMPLETION, CHILD,
     VisibilityScope.PARTICIPANT_PRIVATE, CHILD, True, None),
    ("on-completion child record, unrelated participant", PromotionPolicy.ON_COMPLETION, CHILD,
     VisibilityScope.BRANCH, OTHER, False, OmissionReason.NOT_PROMOTED),
    ("promoted copy (no promotion), parent", PromotionPolicy.NONE, VIEWER, VisibilityScope.BRANCH, VIEWER,
     True, None),
]


@pytest.mark.parametrize(
    ("promotion", "owner", "visibility", "viewer", "admitted", "omission"),
    [row[1:] for row in PROMOTION_TABLE],
    ids=[row[0] for row in PROMOTION_TABLE],
)
def test_promotion(run, promotion, owner, visibility, viewer, admitted, omission):
    assert _admission(run, "memory", branch=ACTIVE, seq=50, owner=owner, visibility=visibility,
                      viewer=viewer, promotion=promotion) == (admitted, omission)


@pytest.mark.parametrize(
    ("branch", "seq", "expected"),
    [
        (ROOT, 0, True),
        (ROOT, FORK_SEQ, True),
        (ROOT, FORK_SEQ + 1, False),
        (ACTIVE, 10**9, True),
        (SIBLING, 1, False),
    ],
)
def test_lineage_contains(branch, seq, expected):
    assert lineage().contains(branch, seq) is expected


def test_lineage_depth():
    three = lineage(("br-a", 5), ("br-b", 9), ("br-c", None))
    assert [three.depth(b) for b in ("br-c", "br-b", "br-a", "br-x")] == [0, 1, 2, 3]
    assert three.active_branch_id == "br-c"


def test_gate_order_scope_before_promotion_before_privacy():
    """The first denial wins: a record failing several gates reports the earliest."""
    route = DEFAULT_POLICY.route("public-only")
    assert route is not None
    viewer = Viewer(VIEWER, lineage(), route)
    record = memory("m", 12, branch=SIBLING, owner=CHILD, promotion=PromotionPolicy.NEVER)
    assert admit(record, record.privacy, viewer).reason is OmissionReason.OUTSIDE_LINEAGE
    record = memory("m", 12, owner=CHILD, promotion=PromotionPolicy.NEVER)
    assert admit(record, record.privacy, viewer).reason is OmissionReason.NOT_PROMOTED
    record = memory("m", 12)
    assert admit(record, record.privacy, viewer).reason is OmissionReason.PRIVACY_ROUTE


def test_a_text_memory_is_shown_in_detail_on_a_large_budget_and_as_its_brief_on_a_small_one(run):
    detail = "bash(command=cat ledger.py) → import os | … | class Ledger: | def post(self, entry): (206 lines, 15 shown)"
    brief = "bash(command=cat ledger.py) → import os | … | pass (206 lines, 2 shown)"
    graph = candidates(tool_memories=[memory("mem-file", 20, summary=detail, payload={BRIEF_KEY: brief})])
    assert DEFAULT_POLICY.memory_detail_budget == 16384
    large = system_text(run(graph, boundary(token_budget=16384)))
    small = system_text(run(graph, boundary(token_budget=16383)))
    assert "def post(self, entry)" in large and "2 shown" not in large
    assert "2 shown" in small and "def post" not in small
    # A memory without a brief (a structured result's, or one derived before briefs) shows its summary.
    plain = candidates(tool_memories=[memory("mem-json", 20, summary="get_order(id=7) → status=paid")])
    assert "status=paid" in system_text(run(plain, boundary(token_budget=1024)))
    never = DEFAULT_POLICY.model_copy(update={"memory_detail_budget": None})
    assert "2 shown" in system_text(run(graph, boundary(token_budget=200_000), never))
