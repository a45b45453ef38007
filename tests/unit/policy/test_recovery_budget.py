"""Recovery protection, receipts, planning state and the token budget."""

from __future__ import annotations

from datetime import timedelta

import pytest

from policy.enums import CLASS_PRIORITY, DecisionOutcome, FreshnessClass, OmissionReason, RecordClass, ToolCallStatus
from policy.assembler import short_ids_for
from policy.policy import DEFAULT_POLICY, ContextPolicy
from policy_builders import (
    NOW,
    OTHER,
    VIEWER,
    artifact,
    boundary,
    candidates,
    checkpoint,
    decisions_for,
    memory,
    message,
    omission_of,
    outcome_of,
    selected,
    skill,
    system_text,
    tool_call,
    user_memory,
)

S = ToolCallStatus
TINY = boundary(token_budget=1)

RECOVERY_TABLE = [
    # (case, status, owner, retry_critical, protected)
    ("own pending", S.PENDING, VIEWER, False, True),
    ("own deferred", S.DEFERRED, VIEWER, False, True),
    ("own failed", S.FAILED, VIEWER, False, True),
    ("own retrying", S.RETRYING, VIEWER, False, True),
    ("own failed, retry-critical", S.FAILED, VIEWER, True, True),
    ("own pending, retry-critical", S.PENDING, VIEWER, True, True),
    ("other's pending", S.PENDING, OTHER, False, False),
    ("other's deferred", S.DEFERRED, OTHER, False, False),
    ("other's failed, retry-critical", S.FAILED, OTHER, True, False),
]


@pytest.mark.parametrize(
    ("status", "owner", "retry_critical", "protected"),
    [row[1:] for row in RECOVERY_TABLE],
    ids=[row[0] for row in RECOVERY_TABLE],
)
def test_unresolved_calls_are_protected_for_their_owner_only(run, status, owner, retry_critical, protected):
    call = tool_call("tc-1", 20, status, participant=owner, retry_critical=retry_critical,
                     last_error="HTTP 503 from upstream" if status in (S.FAILED, S.RETRYING) else None)
    world = candidates(tool_calls=[call], tool_memories=[memory("mem-1", 21)])
    result = run(world, TINY)
    ref = "tool_call:tc-1"
    assert selected(result, ref) is protected
    if protected:
        assert outcome_of(result, ref) is DecisionOutcome.PROTECTED
        assert "Open tool calls (unresolved; do not assume success):" in system_text(result)
    else:
        assert omission_of(result, ref) is OmissionReason.BUDGET
    # The unprotected memory never survives a one-token budget.
    assert omission_of(result, "memory:mem-1") is OmissionReason.BUDGET


@pytest.mark.parametrize(
    ("status", "fields", "expected"),
    [
        (S.PENDING, {}, "[t:tc1] search_docs({\"query\":\"tc-1\"}) PENDING"),
        (S.DEFERRED, {"waiting_for": "user to pick a document"},
         "[t:tc1] search_docs({\"query\":\"tc-1\"}) DEFERRED: waiting for user to pick a document"),
        (S.DEFERRED, {}, "DEFERRED: waiting for an external answer"),
        (S.FAILED, {"last_error": "KeyError: 'date'", "attempts": 3},
         "FAILED after 3 attempt(s): KeyError: 'date'"),
        (S.FAILED, {"last_error": "quota exceeded", "retry_critical": True},
         "FAILED after 1 attempt(s), retry-critical: quota exceeded"),
        (S.RETRYING, {}, "RETRYING after 1 attempt(s): no error text captured"),
    ],
)
def test_recovery_lines(run, status, fields, expected):
    result = run(candidates(tool_calls=[tool_call("tc-1", 20, status, **fields)]))
    assert expected in system_text(result)


def test_retry_critical_error_keeps_headline_and_final_line_verbatim(run):
    frames = "".join(f'  File "/app/step_{i}.py", line {i}, in run\n    step_{i}()\n' for i in range(30))
    final = "ValueError: " + "z" * 300
    error = "deploy failed on attempt 3/3\nTraceback (most recent call last):\n" + frames + final
    call = tool_call("tc-1", 20, S.FAILED, retry_critical=True, last_error=error)
    result = run(candidates(tool_calls=[call]), policy=ContextPolicy(max_error_chars=400))
    text = system_text(result)
    assert "deploy failed on attempt 3/3 | [" in text
    assert text.rstrip().endswith(final)  # the line a fix is written against, whole
    assert "step_0" not in text  # frames go first
    assert "line(s) omitted]" in text


def test_short_errors_are_kept_whole(run):
    error = "HTTP 503 from upstream\nretry after 30 s"
    call = tool_call("tc-1", 20, S.FAILED, retry_critical=True, last_error=error)
    result = run(candidates(tool_calls=[call]))
    assert "HTTP 503 from upstream | retry after 30 s" in system_text(result)


def test_succeeded_call_covered_by_memory_is_resolved_elsewhere(run):
    call = tool_call("tc-1", 20, S.SUCCEEDED)
    world = candidates(
        tool_calls=[call],
        artifacts=[artifact("art-1", 20, call=call)],
        tool_memories=[memory("mem-1", 21, sources=["art-1"])],
    )
    result = run(world)
    assert omission_of(result, "tool_call:tc-1") is OmissionReason.RESOLVED_ELSEWHERE
    [decision] = decisions_for(result, "tool_call:tc-1")
    assert decision.kind == "tool_call"
    assert "Other tool calls:" not in system_text(result)


def test_uncovered_succeeded_call_renders_as_a_receipt(run):
    result = run(candidates(tool_calls=[tool_call("tc-1", 20, S.SUCCEEDED, name="send_email",
                                                  arguments={"to": "bob@example.com"})]))
    assert "Other tool calls:\n- [t:tc1] send_email({\"to\":\"bob@example.com\"}) ok" in system_text(result)
    assert outcome_of(result, "tool_call:tc-1") is DecisionOutcome.INCLUDED


def test_succeeded_retry_critical_call_is_not_recovery_state(run):
    result = run(candidates(tool_calls=[tool_call("tc-1", 20, S.SUCCEEDED, retry_critical=True)]), TINY)
    assert omission_of(result, "tool_call:tc-1") is OmissionReason.BUDGET


def test_memory_covering_another_call_does_not_hide_an_uncovered_one(run):
    covered = tool_call("tc-1", 20, S.SUCCEEDED)
    uncovered = tool_call("tc-2", 22, S.SUCCEEDED)
    world = candidates(
        tool_calls=[covered, uncovered],
        artifacts=[artifact("art-1", 20, call=covered), artifact("art-2", 22, call=uncovered)],
        tool_memories=[memory("mem-1", 21, sources=["art-1"])],
    )
    result = run(world)
    assert omission_of(result, "tool_call:tc-1") is OmissionReason.RESOLVED_ELSEWHERE
    assert selected(result, "tool_call:tc-2")


# --------------------------------------------------------------------------- planning state


def test_latest_checkpoint_per_kind_is_protected_and_older_ones_superseded(run):
    world = candidates(checkpoints=[
        checkpoint("cp-1", 20, "tool_loop", state={"step": 1}),
        checkpoint("cp-2", 25, "tool_loop", state={"step": 2}, references=("mem-1",)),
        checkpoint("cp-3", 22, "deferred_wait", state={"waiting": "user"}),
    ], tool_memories=[memory("mem-1", 21)])
    result = run(world, TINY)
    assert omission_of(result, "checkpoint:cp-1") is OmissionReason.SUPERSEDED
    assert outcome_of(result, "checkpoint:cp-2") is DecisionOutcome.PROTECTED
    assert outcome_of(result, "checkpoint:cp-3") is DecisionOutcome.PROTECTED
    text = system_text(result)
    assert '[c:cp2] tool_loop: {"step":2} refs mem1' in text
    assert '[c:cp3] deferred_wait: {"waiting":"user"}' in text


def test_latest_active_skill_state_is_kept(run):
    world = candidates(skill_states=[
        skill("sk-1", 20, "report", state={"page": 1}),
        skill("sk-2", 24, "report", state={"page": 2}),
        skill("sk-3", 22, "triage", active=False),
    ])
    result = run(world)
    assert omission_of(result, "skill:sk-1") is OmissionReason.SUPERSEDED
    assert omission_of(result, "skill:sk-3") is OmissionReason.SUPERSEDED
    assert "inactive skill" in decisions_for(result, "skill:sk-3")[0].reason
    assert '[s:sk2] report: {"page":2}' in system_text(result)
    assert outcome_of(result, "skill:sk-2") is DecisionOutcome.INCLUDED


# --------------------------------------------------------------------------- budget


def _crowded_world():
    """Protected state, memories, user memories and receipts that cannot all fit a small budget."""
    memories = [memory(f"mem-{i:02d}", 30 + i, summary=f"fact {i}") for i in range(6)]
    receipts = [
        tool_call(f"tc-r{i}", 40 + i, S.SUCCEEDED, name="fetch_page",
                  arguments={"url": f"https://example.com/{'very-long-path-segment/' * 6}{i}"})
        for i in range(4)
    ]
    return candidates(
        tool_memories=memories,
        tool_calls=[tool_call("tc-open", 20, S.PENDING)] + receipts,
        user_memories=[user_memory("um-1", 1, "likes short answers")],
        messages=[message("u-last", 50, "user", "and now?")],
    )


def _kept_and_dropped(result):
    kept = [d.subject_ref for d in result.decisions
            if d.outcome in (DecisionOutcome.INCLUDED, DecisionOutcome.PROTECTED, DecisionOutcome.MARKED_STALE)]
    dropped = [d.subject_ref for d in result.decisions if d.omission is OmissionReason.BUDGET]
    return kept, dropped


def test_tiny_budget_keeps_only_protected_items(run):
    result = run(_crowded_world(), TINY)
    kept, dropped = _kept_and_dropped(result)
    assert sorted(kept) == ["message:u-last", "tool_call:tc-open"]
    assert len(dropped) == 6 + 4 + 1
    assert result.record.omitted_counts[OmissionReason.BUDGET.value] == 11
    assert all(d.kind in ("memory", "receipt", "user") for d in result.decisions if d.omission is OmissionReason.BUDGET)
    assert all("would exceed 1-token budget" in d.reason
               for d in result.decisions if d.omission is OmissionReason.BUDGET)


def test_large_budget_keeps_everything(run):
    result = run(_crowded_world())
    assert OmissionReason.BUDGET.value not in result.record.omitted_counts
    assert len(result.record.selected_refs) == 1 + 6 + 4 + 1 + 1


@pytest.mark.parametrize("budget", range(60, 400, 7))
def test_budget_drops_lowest_priority_first(run, budget):
    """Receipts (operational) cost more than memories here, so one is kept only when every memory is."""
    result = run(_crowded_world(), boundary(token_budget=budget))
    kept, dropped = _kept_and_dropped(result)
    assert {"message:u-last", "tool_call:tc-open"} <= set(kept)
    receipts_kept = [r for r in kept if r.startswith("tool_call:tc-r")]
    memories_dropped = [r for r in dropped if r.startswith("memory:")]
    if receipts_kept:
        assert not memories_dropped, (receipts_kept, memories_dropped)
    # Among equal-class memories, newer ones are kept first.
    memories_kept = sorted(r for r in kept if r.startswith("memory:"))
    assert memories_kept == sorted(f"memory:mem-{i:02d}" for i in range(6))[6 - len(memories_kept):]
    assert set(kept).isdisjoint(dropped)


def test_assembled_tokens_respect_the_budget_when_nothing_is_protected_beyond_it(run):
    world = _crowded_world()
    for budget in range(80, 400, 11):
        result = run(world, boundary(token_budget=budget))
        assert result.record.token_budget == budget
        assert result.record.assembled_tokens <= budget, budget


def test_boundary_budget_overrides_policy_default(run):
    result = run(_crowded_world(), boundary(token_budget=None), policy=ContextPolicy(default_token_budget=1))
    assert result.record.token_budget == 1
    assert omission_of(result, "memory:mem-00") is OmissionReason.BUDGET


def test_max_memories_caps_rendered_memories(run):
    result = run(_crowded_world(), policy=ContextPolicy(max_memories=2))
    kept = [r for r in result.record.selected_refs if r.startswith("memory:")]
    assert kept == ["memory:mem-04", "memory:mem-05"]
    capped = [d for d in result.decisions if d.reason == "memory cap reached"]
    assert [d.subject_ref for d in capped] == [f"memory:mem-0{i}" for i in (3, 2, 1, 0)]
    assert all(d.omission is OmissionReason.BUDGET for d in capped)


def test_max_memories_does_not_count_stale_markers(run):
    stale = memory("mem-stale", 60, freshness=FreshnessClass.VOLATILE, observed_at=NOW - timedelta(hours=1))
    world = candidates(tool_memories=[stale, memory("mem-1", 61)])
    result = run(world, policy=ContextPolicy(max_memories=1))
    assert selected(result, "memory:mem-stale") and selected(result, "memory:mem-1")


def test_class_priority_order_is_the_documented_one():
    assert sorted(CLASS_PRIORITY, key=CLASS_PRIORITY.__getitem__) == [
        RecordClass.RECOVERY,
        RecordClass.POLICY,
        RecordClass.PLANNING,
        RecordClass.CONVERSATIONAL,
        RecordClass.EPISTEMIC,
        RecordClass.PROVENANCE,
        RecordClass.OPERATIONAL,
    ]
    assert set(CLASS_PRIORITY) == set(RecordClass)


@pytest.mark.parametrize("budget", [0, -10])
def test_zero_or_negative_budget_keeps_only_protected_items(run, budget):
    """0 is a budget, not "unset": it must not fall back to the (larger) policy default."""
    result = run(_crowded_world(), boundary(token_budget=budget))
    assert result.record.token_budget == budget
    kept, dropped = _kept_and_dropped(result)
    assert sorted(kept) == ["message:u-last", "tool_call:tc-open"]
    assert len(dropped) == 11


def test_a_failed_calls_error_memory_is_not_repeated_next_to_its_open_call(run):
    call = tool_call("tc-1", 20, S.FAILED, retry_critical=True, last_error="AccessDenied: no s3:PutObject")
    world = candidates(
        tool_calls=[call],
        artifacts=[artifact("art-1", 21, b"AccessDenied: no s3:PutObject", call=call)],
        tool_memories=[memory("mem-1", 22, sources=["art-1"], summary="search_docs FAILED: AccessDenied")],
    )
    result = run(world)
    assert selected(result, "tool_call:tc-1")
    assert omission_of(result, "memory:mem-1") is OmissionReason.RESOLVED_ELSEWHERE
    assert system_text(result).count("AccessDenied") == 1


def test_a_superseded_results_call_is_represented_by_the_replacement(run):
    old_call = tool_call("tc-old", 20, S.SUCCEEDED)
    new_call = tool_call("tc-new", 30, S.SUCCEEDED)
    world = candidates(
        tool_calls=[old_call, new_call],
        artifacts=[artifact("art-old", 21, call=old_call), artifact("art-new", 31, call=new_call)],
        tool_memories=[
            memory("mem-old", 22, sources=["art-old"], summary="v1", superseded_by="mem-new"),
            memory("mem-new", 32, sources=["art-new"], summary="v2", supersedes=("mem-old",)),
        ],
    )
    result = run(world)
    assert omission_of(result, "memory:mem-old") is OmissionReason.SUPERSEDED
    # No "Other tool calls: ... ok" receipt for the call whose result was replaced.
    assert omission_of(result, "tool_call:tc-old") is OmissionReason.RESOLVED_ELSEWHERE
    assert "Other tool calls" not in system_text(result)


# --------------------------------------------------------------------------- many failures within the budget (issue 11, class 9)


def _many_failures(tools: int, per_tool: int) -> list:
    calls = []
    seq = 100
    for attempt in range(per_tool):
        for index in range(tools):
            seq += 1
            calls.append(tool_call(f"tc-f{index:03d}-{attempt:02d}", seq, S.FAILED, name=f"crm.tool{index:03d}",
                                   arguments={"account": f"A-{attempt}", "page": attempt},
                                   last_error=f"Traceback (most recent call last):\n  File \"x.py\"\n"
                                              f"TimeoutError: upstream {index} timed out on try {attempt}",
                                   attempts=3, retry_critical=index % 2 == 0))
    return calls


@pytest.mark.parametrize(("tools", "per_tool"), [(1, 150), (10, 15), (150, 1)],
                         ids=["one tool", "ten tools", "150 tools"])
def test_many_failed_calls_stay_within_the_budget_with_every_id(run, tools, per_tool):
    failures = _many_failures(tools, per_tool)
    deferred = tool_call("tc-deferred", 50, S.DEFERRED, name="human.pick", waiting_for="the user's choice")
    opening = message("u-open", 40, content="Reconcile the Q3 accounts and tell me which ones failed.")
    world = candidates(messages=[opening], tool_calls=[deferred, *failures])
    result = run(world, boundary(token_budget=4096))

    assert result.record.assembled_tokens <= 4096
    text = system_text(result)
    assert selected(result, "message:u-open"), "the opening request was dropped for recovery state"
    # Every open or deferred call keeps its own line; every failure is still named by its id.
    assert sum(line.startswith("- [t:") and "DEFERRED" in line for line in text.splitlines()) == 1
    short = short_ids_for(world)
    for call in failures:
        assert f"t:{short(call.id)}" in text, call.id
    # The tools that failed most recently keep a line with their latest error verbatim (the last tool
    # index failed last); the older tools' failures are named by id on the shared line.
    lined = range(tools - 1, max(-1, tools - 1 - DEFAULT_POLICY.max_failed_tools), -1)
    for index in lined:
        assert f"TimeoutError: upstream {index} timed out on try {per_tool - 1}" in text, index
    assert ("FAILED earlier, not retried since:" in text) is (tools > DEFAULT_POLICY.max_failed_tools)
    for call in failures:
        assert outcome_of(result, f"tool_call:{call.id}") in (DecisionOutcome.PROTECTED, DecisionOutcome.INCLUDED)


def test_calls_past_the_candidate_limit_are_recorded_not_lost(run):
    world = candidates(tool_calls=[tool_call("tc-1", 20, S.FAILED, last_error="x")], unloaded_open_calls=2,
                       unloaded_failed_calls=7)
    result = run(world)
    for what, count in (("open", 2), ("failed", 7)):
        [decision] = decisions_for(result, f"tool_calls:unloaded-{what}")
        assert decision.outcome is DecisionOutcome.OMITTED and decision.reason.startswith(f"{count} older {what}")
    assert not decisions_for(run(candidates()), "tool_calls:unloaded-open")
