"""The pure taint rule: the join, the fail-closed defaults, and what an assembly counts as shown."""

from __future__ import annotations

import pytest

from policy.taint import ContextSources, context_privacy, context_sources
from policy.enums import PRIVACY_RANK, PrivacyClass, ToolCallStatus, at_least, is_looser, strictest_privacy
from policy.policy import DEFAULT_POLICY, ContextPolicy, ProviderRoute
from policy.records import PolicyDecisionRecord, ToolCallRequest
from policy.tools import ToolCatalog, ToolSpec
from policy_builders import artifact, boundary, candidates, memory, message, tool_call


def test_the_join_is_the_strictest_and_an_empty_one_fails_closed() -> None:
    assert strictest_privacy([PrivacyClass.USER, PrivacyClass.GOOGLE_DERIVED, PrivacyClass.PUBLIC]) \
        is PrivacyClass.GOOGLE_DERIVED
    assert strictest_privacy([]) is PrivacyClass.SECRET_ADJACENT
    assert at_least(PrivacyClass.USER, None) is PrivacyClass.USER
    assert at_least(PrivacyClass.OAUTH, PrivacyClass.PUBLIC) is PrivacyClass.OAUTH
    assert is_looser(PrivacyClass.USER, PrivacyClass.OAUTH) and not is_looser(PrivacyClass.OAUTH, PrivacyClass.OAUTH)
    # Every class is ranked, so a new one cannot be added without deciding where it sits.
    assert set(PRIVACY_RANK) == set(PrivacyClass)


def test_an_unknown_tool_fails_closed() -> None:
    catalog = ToolCatalog(tools=(ToolSpec(name="files.write", privacy=PrivacyClass.USER),))
    assert catalog.spec("files.write").privacy is PrivacyClass.USER
    assert catalog.spec("never.declared").privacy is PrivacyClass.SECRET_ADJACENT


def _decision(ref: str, reason: str, kind: str = "appended", outcome: str = "included") -> PolicyDecisionRecord:
    return PolicyDecisionRecord(kind=kind, subject_ref=ref, outcome=outcome, reason=reason, policy_version="v")


def test_context_sources_reads_refs_rehydration_and_appended_results() -> None:
    sources = context_sources(
        ("memory:m1", "message:u1", "epoch:e1"),
        ("artifact:a1#rows=1-3",),
        (_decision("tool_call:t1", "own result as a native tool message (raw)", outcome="rehydrated"),
         _decision("tool_call:t2", "own result as a native tool message (withheld)"),
         _decision("memory:m9", "stale", kind="freshness", outcome="omitted"),
         _decision("route:x", "unknown route", kind="route", outcome="denied"),
         _decision("checkpoint:k1", "restores from a checkpoint", kind="restore", outcome="protected")),
    )
    assert sources == ContextSources(shown=frozenset({"memory:m1", "message:u1", "artifact:a1", "tool_call:t1"}),
                                     arguments_only=frozenset({"tool_call:t2"}))


def test_context_privacy_is_the_strictest_shown_and_unknown_refs_fail_closed() -> None:
    sources = ContextSources(shown=frozenset({"memory:m1", "message:u1"}),
                             arguments_only=frozenset({"tool_call:t2"}))
    classes = {"memory:m1": PrivacyClass.OAUTH, "tool_call:t2": PrivacyClass.USER}
    assert context_privacy(sources, classes) is PrivacyClass.OAUTH
    assert context_privacy(ContextSources(shown=frozenset({"message:u1"})), {}) is PrivacyClass.USER
    assert context_privacy(ContextSources(shown=frozenset()), {}) is PrivacyClass.PUBLIC
    assert context_privacy(ContextSources(shown=frozenset({"memory:gone"})), {}) is PrivacyClass.SECRET_ADJACENT


def test_a_withheld_own_result_is_recorded_as_arguments_only(run) -> None:
    """The assembler's ``appended`` decision for a withheld result is what context_sources reads."""
    route = ProviderRoute(name="tight", allowed=frozenset({PrivacyClass.PUBLIC, PrivacyClass.USER}),
                          raw_allowed=frozenset({PrivacyClass.PUBLIC, PrivacyClass.USER}))
    policy = ContextPolicy(routes=(*DEFAULT_POLICY.routes, route))
    call = tool_call("t1", 21, ToolCallStatus.SUCCEEDED, name="vault.peek", arguments={"q": "k"})
    step = message("s1", 20, "assistant", "", tool_calls=(ToolCallRequest(call_id=call.call_id, name=call.name,
                                                                           arguments=call.arguments),))
    secret = artifact("a1", 22, b"MARK-secret", call=call, privacy=PrivacyClass.SECRET_ADJACENT)
    world = candidates(messages=[message("u1", 19), step], tool_calls=[call], artifacts=[secret],
                       tool_memories=[memory("m1", 23, sources=("a1",), summary="MARK-secret",
                                             privacy=PrivacyClass.SECRET_ADJACENT)])
    result = run(world, boundary(provider_route="tight"), policy, {"a1": b"MARK-secret"})
    assert "MARK-secret" not in "".join(m.content or "" for m in result.messages)
    sources = context_sources(result.record.selected_refs, result.record.rehydrated_refs, result.decisions)
    assert "tool_call:t1" in sources.arguments_only and "tool_call:t1" not in sources.shown
    assert "memory:m1" not in sources.shown and "artifact:a1" not in sources.shown
    classes = {"tool_call:t1": PrivacyClass.USER}
    assert context_privacy(sources, classes) is PrivacyClass.USER


@pytest.mark.parametrize("shown", [PrivacyClass.OAUTH, PrivacyClass.GOOGLE_DERIVED])
def test_a_shown_memory_sets_the_class(run, shown: PrivacyClass) -> None:
    world = candidates(messages=[message("u1", 19)],
                       tool_memories=[memory("m1", 23, privacy=shown)])
    result = run(world)
    sources = context_sources(result.record.selected_refs, result.record.rehydrated_refs, result.decisions)
    assert context_privacy(sources, {"memory:m1": shown}) is shown
