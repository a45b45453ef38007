"""Privacy routing: each default route against each privacy class, for summaries and raw bytes."""

from __future__ import annotations

import pytest

from policy.enums import DecisionOutcome, OmissionReason, PrivacyClass
from policy.policy import DEFAULT_POLICY
from policy.records import RouteLimit
from policy_builders import (
    artifact,
    boundary,
    candidates,
    decisions_for,
    evidence,
    memory,
    message,
    omission_of,
    outcome_of,
    selected,
    system_text,
    user_memory,
)

P = PrivacyClass
ALL = tuple(PrivacyClass)

# What each default route may receive. Written out independently of DEFAULT_ROUTES.
SUMMARY_ALLOWED = {
    "local": {P.PUBLIC, P.USER, P.OAUTH, P.GOOGLE_DERIVED, P.SECRET_ADJACENT},
    "scripted": {P.PUBLIC, P.USER, P.OAUTH, P.GOOGLE_DERIVED, P.SECRET_ADJACENT},
    "openai": {P.PUBLIC, P.USER, P.OAUTH, P.GOOGLE_DERIVED},
    "anthropic": {P.PUBLIC, P.USER, P.OAUTH, P.GOOGLE_DERIVED},
    "public-only": {P.PUBLIC},
}
RAW_ALLOWED = {
    "local": {P.PUBLIC, P.USER, P.OAUTH, P.GOOGLE_DERIVED},
    "scripted": {P.PUBLIC, P.USER, P.OAUTH, P.GOOGLE_DERIVED},
    "openai": {P.PUBLIC, P.USER, P.OAUTH},
    "anthropic": {P.PUBLIC, P.USER, P.OAUTH},
    "public-only": {P.PUBLIC},
}
ROUTES = sorted(SUMMARY_ALLOWED)
RAW_TEXT = "RAW-BODY-9931"


def _world(privacy: PrivacyClass):
    return candidates(
        artifacts=[artifact("art-1", 20, RAW_TEXT.encode(), privacy=privacy, content_type="text/plain")],
        tool_memories=[memory("mem-1", 21, sources=["art-1"], privacy=privacy, summary="inbox has 3 unread")],
        user_memories=[user_memory("um-1", 1, "prefers metric units", privacy=privacy)],
        messages=[message("u-1", 22, "user", "summarise my inbox")],
    )


@pytest.mark.parametrize("privacy", ALL, ids=[p.value for p in ALL])
@pytest.mark.parametrize("route", ROUTES)
def test_summary_routing(run, route, privacy):
    result = run(_world(privacy), boundary(provider_route=route))
    allowed = privacy in SUMMARY_ALLOWED[route]
    for ref in ("memory:mem-1", "user_memory:um-1"):
        assert selected(result, ref) is allowed
        assert omission_of(result, ref) is (None if allowed else OmissionReason.PRIVACY_ROUTE)
    assert ("inbox has 3 unread" in system_text(result)) is allowed
    if not allowed:
        [decision] = decisions_for(result, "memory:mem-1")
        assert decision.kind == "privacy"
        assert route in decision.reason


@pytest.mark.parametrize("privacy", ALL, ids=[p.value for p in ALL])
@pytest.mark.parametrize("route", ROUTES)
def test_raw_routing(run, route, privacy):
    world = _world(privacy)
    result = run(world, boundary(provider_route=route, evidence_requests=(evidence("art-1"),)),
                 raw={"art-1": RAW_TEXT.encode()})
    ref = "artifact:art-1"
    text = system_text(result)
    if privacy not in SUMMARY_ALLOWED[route]:
        # The artifact itself fails admission: nothing raw, no withheld note either.
        assert omission_of(result, ref) is OmissionReason.PRIVACY_ROUTE
        assert "withheld" not in text
    elif privacy in RAW_ALLOWED[route]:
        assert outcome_of(result, ref) is DecisionOutcome.REHYDRATED
        assert RAW_TEXT in text
        assert result.record.rehydrated_refs == ("artifact:art-1#whole",)
    else:
        assert outcome_of(result, ref) is DecisionOutcome.DENIED
        assert omission_of(result, ref) is OmissionReason.RAW_PRIVACY
        assert "withheld" in text
    assert (RAW_TEXT in text) is (privacy in RAW_ALLOWED[route])


def test_default_routes_match_the_table():
    for name in ROUTES:
        route = DEFAULT_POLICY.route(name)
        assert route is not None
        assert set(route.allowed) == SUMMARY_ALLOWED[name]
        assert set(route.raw_allowed) == RAW_ALLOWED[name]
        assert route.raw_allowed <= route.allowed, "raw must never be more permissive than summaries"


@pytest.mark.parametrize("route", ["mistral", "", "OPENAI", "local "])
def test_unknown_route_fails_closed_to_public_only(run, route):
    world = candidates(
        tool_memories=[
            memory("mem-public", 20, privacy=P.PUBLIC, summary="public fact"),
            memory("mem-user", 21, privacy=P.USER, summary="user fact"),
            memory("mem-google", 22, privacy=P.GOOGLE_DERIVED, summary="google fact"),
        ],
    )
    result = run(world, boundary(provider_route=route))
    [decision] = decisions_for(result, f"route:{route}")
    assert decision.kind == "route"
    assert decision.outcome is DecisionOutcome.DENIED
    assert decision.omission is None
    assert selected(result, "memory:mem-public")
    assert omission_of(result, "memory:mem-user") is OmissionReason.PRIVACY_ROUTE
    assert omission_of(result, "memory:mem-google") is OmissionReason.PRIVACY_ROUTE
    assert "fail-closed" in decisions_for(result, "memory:mem-user")[0].reason
    text = system_text(result)
    assert "public fact" in text
    assert "user fact" not in text and "google fact" not in text


def test_known_route_records_no_route_decision(run):
    result = run(candidates(), boundary(provider_route="openai"))
    assert not [d for d in result.decisions if d.kind == "route"]


def test_google_derived_summary_passes_on_openai_but_raw_is_withheld(run):
    raw = b'{"messages":[{"from":"alice@example.com","subject":"Q3 numbers"}]}'
    world = candidates(
        artifacts=[artifact("art-gmail", 20, raw, privacy=P.GOOGLE_DERIVED)],
        tool_memories=[
            memory(
                "mem-gmail", 21, sources=["art-gmail"], privacy=P.GOOGLE_DERIVED,
                summary="1 message from alice@example.com: Q3 numbers",
                source_tool="gmail_search", revalidate_with=("gmail_search", "gmail_get"),
            )
        ],
        messages=[message("u-1", 22, "user", "who wrote about Q3?")],
    )
    result = run(world, boundary(provider_route="openai", evidence_requests=(evidence("art-gmail"),)),
                 raw={"art-gmail": raw})
    text = system_text(result)
    assert selected(result, "memory:mem-gmail")
    assert "1 message from alice@example.com: Q3 numbers" in text
    assert omission_of(result, "artifact:art-gmail") is OmissionReason.RAW_PRIVACY
    assert outcome_of(result, "artifact:art-gmail") is DecisionOutcome.DENIED
    assert result.record.rehydrated_refs == ()
    assert raw.decode() not in text
    assert '"subject":"Q3 numbers"' not in text
    assert "raw google_derived body withheld on this route" in text
    assert "re-run gmail_search, gmail_get to verify" in text
    assert "[m:memgmail]" in text


def test_withheld_note_falls_back_to_the_source_tool(run):
    world = candidates(
        artifacts=[artifact("art-g", 20, b"{}", privacy=P.GOOGLE_DERIVED)],
        tool_memories=[memory("mem-g", 21, sources=["art-g"], privacy=P.GOOGLE_DERIVED, source_tool="drive_get")],
    )
    result = run(world, boundary(provider_route="openai", evidence_requests=(evidence("art-g"),)),
                 raw={"art-g": b"{}"})
    assert "re-run drive_get to verify" in system_text(result)


AGENT_LIMIT = RouteLimit(allowed=frozenset({P.PUBLIC, P.USER}), raw_allowed=frozenset({P.PUBLIC}))


@pytest.mark.parametrize("privacy", ALL, ids=[p.value for p in ALL])
@pytest.mark.parametrize("route", ROUTES)
def test_an_agents_route_narrows_the_provider_route_and_never_widens_it(run, route, privacy):
    world = _world(privacy)
    result = run(world, boundary(provider_route=route, route_limit=AGENT_LIMIT,
                                 evidence_requests=(evidence("art-1"),)), raw={"art-1": RAW_TEXT.encode()})
    summary = privacy in SUMMARY_ALLOWED[route] and privacy in AGENT_LIMIT.allowed
    raw = summary and privacy in RAW_ALLOWED[route] and privacy in AGENT_LIMIT.raw_allowed
    assert selected(result, "memory:mem-1") is summary
    assert omission_of(result, "memory:mem-1") is (None if summary else OmissionReason.PRIVACY_ROUTE)
    assert (RAW_TEXT in system_text(result)) is raw
    [noted] = [d for d in decisions_for(result, f"route:{route}") if d.outcome is DecisionOutcome.NOTED]
    narrowed = sorted(c.value for c in SUMMARY_ALLOWED[route] & AGENT_LIMIT.allowed)
    assert f"narrows it to {', '.join(narrowed)} (raw:" in noted.reason


def test_an_agents_route_that_allows_everything_keeps_the_provider_routes_limits(run):
    everything = RouteLimit(allowed=frozenset(ALL), raw_allowed=frozenset(ALL))
    result = run(_world(P.USER), boundary(provider_route="public-only", route_limit=everything))
    assert not selected(result, "memory:mem-1")
    assert omission_of(result, "memory:mem-1") is OmissionReason.PRIVACY_ROUTE
