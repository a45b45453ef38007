"""Reading assemblies back (policy/explain.py): why-not, trace, diff and what-if totals on real assemblies.

Each world is assembled by the real policy; the explanations are read from
its decisions the way ``dossier explain`` reads stored rows.
"""

from __future__ import annotations

from datetime import timedelta

from policy.admission import resolve_viewer
from policy.enums import DecisionOutcome, FreshnessClass, OmissionReason, PrivacyClass, ToolCallStatus
from policy.explain import (
    Side,
    billed,
    diff_assemblies,
    final_decisions,
    rule_family,
    shown_refs,
    totals,
    trace,
    where_shown,
    why_not,
)
from policy.pricing import price_for_route
from policy.records import PolicyDecisionRecord
from policy.selection import Ledger
from policy.policy import DEFAULT_POLICY
from policy.versions import LEAN_POLICY
from policy_builders import (
    NOW,
    OTHER,
    SIBLING,
    artifact,
    boundary,
    candidates,
    memory,
    message,
    tool_call,
)
from policy.enums import VisibilityScope


def _world():
    """A sibling-branch memory, another participant's private memory, a secret one, a superseded one, a kept one."""
    return candidates(
        tool_calls=[tool_call("call-ok", 20, ToolCallStatus.SUCCEEDED),
                    tool_call("call-open", 40, ToolCallStatus.PENDING)],
        artifacts=[artifact("art-ok", 21, b'{"rows": 60}', call=None)],
        tool_memories=[
            memory("mem-ok", 22, sources=["art-ok"], summary="60 rows in sales.csv"),
            memory("mem-sibling", 23, branch=SIBLING, summary="sibling result"),
            memory("mem-private", 24, owner=OTHER, visibility=VisibilityScope.PARTICIPANT_PRIVATE,
                   summary="private notes"),
            memory("mem-secret", 25, privacy=PrivacyClass.SECRET_ADJACENT, summary="api key rotated"),
            memory("mem-old", 26, summary="old count 50", subject_key="count"),
            memory("mem-new", 27, summary="new count 60", subject_key="count", supersedes=("mem-old",)),
        ],
        messages=[message(f"u-{i}", 30 + i, "user" if i % 2 == 0 else "assistant", f"turn {i} text")
                  for i in range(8)],
    )


def _assembled(run, route: str = "openai", policy=None):
    world = _world()
    bound = boundary(provider_route=route)
    result = run(world, bound, policy=policy)
    return world, bound, result


def _shown(result) -> frozenset[str]:
    return shown_refs(result.record.selected_refs, result.record.rehydrated_refs, result.decisions)


def _why(run, ref: str, route: str = "openai"):
    world, bound, result = _assembled(run, route)
    viewer = resolve_viewer(DEFAULT_POLICY, bound, world, Ledger(DEFAULT_POLICY.version_tag))
    return why_not(ref, result.decisions, _shown(result), result.record.policy_version, candidates=world,
                   viewer=viewer), result


def test_why_not_names_the_rule_for_each_kind_of_omission(run) -> None:
    expected = {
        "memory:mem-sibling": ("visibility", OmissionReason.OUTSIDE_LINEAGE),
        "memory:mem-private": ("visibility", OmissionReason.NOT_VISIBLE),
        "memory:mem-secret": ("privacy", OmissionReason.PRIVACY_ROUTE),
        "memory:mem-old": ("supersession", OmissionReason.SUPERSEDED),
        "message:u-2": ("transcript", OmissionReason.OUTSIDE_WINDOW),
    }
    for ref, (rule, omission) in expected.items():
        verdict, result = _why(run, ref)
        assert (verdict.included, verdict.rule, verdict.omission) == (False, rule, omission.value), ref
        assert verdict.policy_version == result.record.policy_version
        assert verdict.decisions, ref


def test_why_not_proves_inclusion_and_where(run) -> None:
    verdict, result = _why(run, "memory:mem-ok")
    assert verdict.included and verdict.rule == "memory" and verdict.outcome == DecisionOutcome.INCLUDED.value
    messages = result.to_openai()
    where = where_shown("memory:mem-ok", messages)
    assert where and all("60 rows in sales.csv" in (messages[i]["content"] or "") for i in where)
    open_call, _ = _why(run, "tool_call:call-open")
    assert open_call.included and open_call.outcome == DecisionOutcome.PROTECTED.value


def test_a_raw_artifact_without_a_row_is_explained_from_the_candidates(run) -> None:
    verdict, _ = _why(run, "artifact:art-ok")
    assert not verdict.included
    assert (verdict.rule, verdict.omission) == ("rehydration", OmissionReason.RAW_NOT_REQUESTED.value)
    assert "mem-ok" in verdict.reason  # its result reaches the model through its memory
    assert verdict.inputs["privacy"] == "user"


def test_a_record_outside_the_candidates_is_said_to_be(run) -> None:
    verdict, _ = _why(run, "memory:never-loaded")
    assert (verdict.included, verdict.rule) == (False, "candidates")
    assert "snapshot seq 1000" in verdict.reason


def test_gate_inputs_show_what_the_rule_read(run) -> None:
    world, bound, result = _assembled(run)
    viewer = resolve_viewer(DEFAULT_POLICY, bound, world, Ledger(DEFAULT_POLICY.version_tag))
    # No row for the sibling memory here: the verdict comes from the gates, with their inputs.
    rows = [d for d in result.decisions if d.subject_ref != "memory:mem-sibling"]
    verdict = why_not("memory:mem-sibling", rows, _shown(result), "v", candidates=world, viewer=viewer)
    assert (verdict.rule, verdict.omission) == ("visibility", OmissionReason.OUTSIDE_LINEAGE.value)
    assert verdict.inputs["branch_id"] == SIBLING
    assert [step["branch_id"] for step in verdict.inputs["lineage"]] == ["br-root", "br-active"]


def test_trace_lists_every_candidate_once_after_the_rows(run) -> None:
    world, bound, result = _assembled(run)
    viewer = resolve_viewer(DEFAULT_POLICY, bound, world, Ledger(DEFAULT_POLICY.version_tag))
    rows = trace(result.decisions, _shown(result), result.record.policy_version, candidates=world, viewer=viewer)
    assert len(rows) >= len(result.decisions)
    refs = {row.ref for row in rows}
    every = {f"memory:{m.id}" for m in world.tool_memories} | {f"tool_call:{c.id}" for c in world.tool_calls} | {
        f"artifact:{a.id}" for a in world.artifacts} | {f"message:{m.id}" for m in world.messages}
    assert every <= refs
    [raw] = [row for row in rows if row.ref == "artifact:art-ok"]
    assert raw.omission == OmissionReason.RAW_NOT_REQUESTED.value


def test_final_decision_prefers_the_row_that_showed_the_record() -> None:
    rows = [
        PolicyDecisionRecord(kind="memory", subject_ref="memory:a", outcome=DecisionOutcome.INCLUDED, reason="fits",
                             policy_version="v"),
        PolicyDecisionRecord(kind="freshness", subject_ref="memory:a", outcome=DecisionOutcome.MARKED_STALE,
                             reason="went stale", policy_version="v"),
        PolicyDecisionRecord(kind="epoch", subject_ref="epoch:x", outcome=DecisionOutcome.NOTED, reason="started",
                             policy_version="v"),
    ]
    assert final_decisions(rows)["memory:a"].kind == "freshness"
    assert "epoch:x" not in final_decisions(rows)
    # A row that showed the record outranks a later one that did not (it reached the model either way).
    shown_then_not = [rows[0], PolicyDecisionRecord(kind="appended", subject_ref="memory:a",
                                                    outcome=DecisionOutcome.OMITTED, reason="x", policy_version="v")]
    assert final_decisions(shown_then_not)["memory:a"].outcome is DecisionOutcome.INCLUDED


def test_diff_under_the_lean_policy_drops_the_window_and_reports_tokens(run) -> None:
    world = _world()
    bound = boundary(provider_route="openai")
    before, after = run(world, bound), run(world, bound, policy=LEAN_POLICY)
    result = diff_assemblies(_side(before, "openai"), _side(after, "openai"))
    dropped = {change.ref for change in result.dropped}
    # The default's window is the last 3 messages (u-5..u-7); the lean policy's is 1 (u-7), and the last
    # user message (u-6) is kept by both as the current request.
    assert "message:u-5" in dropped and not {"message:u-6", "message:u-7"} & dropped
    assert all(change.after_omission == OmissionReason.OUTSIDE_WINDOW.value for change in result.dropped
               if change.ref.startswith("message:"))
    assert result.added == ()
    assert (result.tokens_before, result.tokens_after) == (before.record.assembled_tokens,
                                                          after.record.assembled_tokens)
    assert result.token_change < 0 and result.billed_change < 0
    # Five messages past the window are only counted; from the first one on they are listed in the summary.
    assert "[msg:" not in after.messages[1].content
    listed = run(world, bound, policy=LEAN_POLICY.model_copy(update={"transcript_summary_after": 1}))
    assert '[msg:u4] user: "turn 4 text"' in listed.messages[1].content
    assert "[msg:u5] you: (11 chars, not shown)" in listed.messages[1].content
    assert result.newly_fired == ()  # no privacy, visibility or recovery rule changes
    assert any(change.side == "removed" for change in result.messages)


def test_a_newly_firing_privacy_rule_is_reported(run) -> None:
    world = _world()
    local, hosted = run(world, boundary(provider_route="local")), run(world, boundary(provider_route="openai"))
    result = diff_assemblies(_side(local, "local"), _side(hosted, "openai"))
    fired = {(rule.family, rule.ref) for rule in result.newly_fired}
    assert ("privacy", "memory:mem-secret") in fired
    assert "memory:mem-secret" in {change.ref for change in result.dropped}


def test_consecutive_calls_share_a_prefix_billed_at_the_cache_price(run, counter) -> None:
    world = _world()
    first = run(world, boundary(provider_route="anthropic", token_budget=100_000))
    messages = first.to_openai()
    tokens = tuple(max(1, counter(m["content"] or "")) + 4 for m in messages)
    previous = tuple((_key(m), t) for m, t in zip(messages, tokens, strict=True))
    base = Side(decisions=first.decisions, shown=_shown(first), messages=tuple(messages),
                message_tokens=tuple(t * 100 for t in tokens), assembled_tokens=sum(tokens) * 100,
                provider_route="anthropic", policy_version="v",
                previous_message_tokens=tuple((k, t * 100) for k, t in previous))
    price = price_for_route("anthropic")
    total = sum(tokens) * 100
    assert total >= price.min_tokens
    assert billed(base) == round(total * price.read, 3)  # the whole prompt repeats the previous one
    assert billed(Side(**{**base.__dict__, "previous_message_tokens": ()})) == total
    assert billed(Side(**{**base.__dict__, "provider_route": "no-such-route"})) == total


def test_route_cache_prices() -> None:
    assert (price_for_route("anthropic").read, price_for_route("anthropic").min_tokens) == (0.1, 1024)
    assert (price_for_route("openai").read, price_for_route("openai").min_tokens) == (0.5, 1024)
    assert price_for_route("scripted").read == price_for_route("no-such-route").read == 1.0


def test_rule_families() -> None:
    def row(kind: str, ref: str, outcome: DecisionOutcome, omission: OmissionReason | None = None):
        return PolicyDecisionRecord(kind=kind, subject_ref=ref, outcome=outcome, reason="", omission=omission,
                                    policy_version="v")

    assert rule_family(row("privacy", "memory:a", DecisionOutcome.OMITTED, OmissionReason.PRIVACY_ROUTE)) == "privacy"
    assert rule_family(row("rehydration", "artifact:a", DecisionOutcome.DENIED, OmissionReason.RAW_PRIVACY)) \
        == "privacy"
    assert rule_family(row("visibility", "memory:a", DecisionOutcome.OMITTED, OmissionReason.NOT_VISIBLE)) \
        == "visibility"
    assert rule_family(row("recovery", "tool_call:a", DecisionOutcome.PROTECTED)) == "recovery"
    assert rule_family(row("memory", "memory:a", DecisionOutcome.INCLUDED)) is None


def test_totals_sum_the_diffs(run) -> None:
    world = _world()
    bound = boundary(provider_route="openai")
    before, after = run(world, bound), run(world, bound, policy=LEAN_POLICY)
    one = diff_assemblies(_side(before, "openai"), _side(after, "openai"))
    same = diff_assemblies(_side(before, "openai"), _side(before, "openai"))
    summed = totals([one, same])
    assert (summed.assemblies, summed.changed_assemblies) == (2, 1)
    assert summed.dropped == len(one.dropped)
    assert summed.token_change == one.token_change
    assert same.token_change == 0 and not (same.added or same.dropped or same.changed or same.messages)


def test_stale_memory_marker_becomes_an_omission_under_the_lean_policy(run) -> None:
    stale = memory("mem-stale", 22, summary="3 unread", freshness=FreshnessClass.VOLATILE,
                   observed_at=NOW - timedelta(hours=2))
    world = candidates(tool_memories=[stale], messages=[message("u-0", 30, "user", "inbox?")])
    bound = boundary(provider_route="openai")
    before, after = run(world, bound), run(world, bound, policy=LEAN_POLICY)
    result = diff_assemblies(_side(before, "openai"), _side(after, "openai"))
    [dropped] = result.dropped
    assert (dropped.ref, dropped.before_outcome, dropped.after_omission) == (
        "memory:mem-stale", DecisionOutcome.MARKED_STALE.value, OmissionReason.STALE.value)


def _key(message) -> str:
    from policy.records import canonical_json

    return canonical_json(dict(message))


def _side(result, route: str) -> Side:
    messages = tuple(result.to_openai())
    return Side(decisions=result.decisions, shown=_shown(result), messages=messages,
                message_tokens=tuple(len(str(m.get("content") or "")) // 4 + 4 for m in messages),
                assembled_tokens=result.record.assembled_tokens, provider_route=route,
                policy_version=result.record.policy_version)


def test_a_transcript_message_is_carried_only_where_its_line_is() -> None:
    """A short message ("ok") is found as a line of its own or after its speaker label, not inside any word."""
    sent = [{"role": "user", "content": "ok"}, {"role": "user", "content": "Ada: ok"},
            {"role": "assistant", "content": "The token count is 12; okay."},
            {"role": "user", "content": "look at the book\nok then"}]
    assert where_shown("message:0e1c", sent, text="ok") == [0, 1]
    long = "The quarterly numbers " + "x" * 200
    cut = [{"role": "user", "content": f"Ada: {long[:150]}"}, {"role": "user", "content": "numbers"}]
    assert where_shown("message:0e1c", cut, text=long + "\nsecond line") == [0]
