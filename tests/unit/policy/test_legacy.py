"""The legacy baseline: full transcript replay with every raw tool result on the lineage."""

from __future__ import annotations

import pytest

from policy.enums import MessageRole, PrivacyClass, VisibilityScope
from policy.legacy import legacy_message_count, legacy_messages, legacy_token_count
from policy.records import ChatMessage, ToolCallRequest, canonical_json
from policy.tokens import MESSAGE_OVERHEAD_TOKENS, count_message, count_messages
from policy_builders import (
    OTHER,
    ROOT,
    SIBLING,
    VIEWER,
    artifact,
    boundary,
    call_request,
    candidates,
    message,
    participants,
    tool_call,
)

RAW = {
    "art-a": '{"rows": 3, "region": "north"}',
    "art-b": "From: alice@example.com\nSubject: Q3 numbers\n\nPrivate body for the Critic only.",
    "art-c": "region,amount\nnorth,10\nsouth,20\n",
    "art-late": "ROOT AFTER FORK RESULT",
    "art-sib": "SIBLING RESULT",
}


def _world(counter):
    calls = {
        "a": tool_call("tc-a", 2, "succeeded", branch=ROOT, name="query_db"),
        "b": tool_call("tc-b", 4, "succeeded", branch=ROOT, participant=OTHER, name="gmail_get",
                       visibility=VisibilityScope.PARTICIPANT_PRIVATE, privacy=PrivacyClass.GOOGLE_DERIVED),
        "late": tool_call("tc-late", 11, "succeeded", branch=ROOT),
        "sib": tool_call("tc-sib", 13, "succeeded", branch=SIBLING),
        "c": tool_call("tc-c", 21, "succeeded", name="read_csv"),
        "d": tool_call("tc-d", 21, "deferred", name="approve", waiting_for="user approval"),
        "e": tool_call("tc-e", 23, "failed", name="send_email", last_error="SMTP 550 mailbox unavailable"),
    }
    owners = {"b": OTHER}
    privacy = {"b": PrivacyClass.GOOGLE_DERIVED}
    seqs = {"a": 3, "b": 5, "late": 12, "sib": 14, "c": 22}
    branches = {"a": ROOT, "b": ROOT, "late": ROOT, "sib": SIBLING, "c": "br-active"}
    arts = [
        artifact(f"art-{k}", seqs[k], RAW[f"art-{k}"].encode(), call=calls[k], branch=branches[k],
                 owner=owners.get(k, VIEWER), privacy=privacy.get(k, PrivacyClass.USER),
                 result_tokens=counter(RAW[f"art-{k}"]))
        for k in seqs
    ]
    messages = [
        message("u1", 1, "user", "how many rows?", branch=ROOT),
        message("a2", 2, "assistant", "", branch=ROOT, tool_calls=(call_request(calls["a"]),)),
        message("a4", 4, "assistant", "checking mail", branch=ROOT, author=OTHER,
                tool_calls=(call_request(calls["b"]),)),
        message("u6", 6, "user", "thanks", branch=ROOT),
        message("a11", 11, "assistant", "", branch=ROOT, tool_calls=(call_request(calls["late"]),)),
        message("u12", 12, "user", "SIBLING QUESTION", branch=SIBLING),
        message("a13", 13, "assistant", "", branch=SIBLING, tool_calls=(call_request(calls["sib"]),)),
        message("u20", 20, "user", "now the csv, then approve"),
        message("a21", 21, "assistant", "reading", tool_calls=(call_request(calls["c"]), call_request(calls["d"]))),
        message("a23", 23, "assistant", "", tool_calls=(
            call_request(calls["e"]),
            ToolCallRequest(call_id="call-unknown", name="mystery", arguments={"x": 1}),
        )),
    ]
    return candidates(messages=messages, tool_calls=list(calls.values()), artifacts=arts)


@pytest.fixture
def world(counter):
    return _world(counter)


@pytest.mark.parametrize("participant_index", [0, 1], ids=["viewer", "other"])
def test_legacy_token_count_equals_counting_the_replay(world, counter, participant_index):
    participant = participants()[participant_index]
    replay = legacy_messages(world, participant, RAW)
    assert legacy_token_count(world, participant, counter) == count_messages(replay, counter)
    assert legacy_message_count(world, participant) == len(replay)


def test_replay_contains_every_participants_results_on_the_lineage_only(world):
    replay = legacy_messages(world, participants()[0], RAW)
    tool_results = [(m.tool_call_id, m.content) for m in replay if m.role is MessageRole.TOOL]
    assert tool_results == [
        ("call-tc-a", RAW["art-a"]),
        ("call-tc-b", RAW["art-b"]),  # another participant's private, google-derived body: replay ignores scope
        ("call-tc-c", RAW["art-c"]),
        ("call-tc-d", "[deferred] user approval"),
        ("call-tc-e", "[failed] SMTP 550 mailbox unavailable"),
        ("call-unknown", "[no result recorded]"),
    ]
    everything = "\n".join(m.content or "" for m in replay)
    for absent in ("SIBLING", "ROOT AFTER FORK"):
        assert absent not in everything


def test_replay_shape(world):
    replay = legacy_messages(world, participants()[0], RAW)
    assert [m.role.value for m in replay] == [
        "system",
        "user", "assistant", "tool", "assistant", "tool", "user",
        "user", "assistant", "tool", "tool", "assistant", "tool", "tool",
    ]
    assert replay[0].content == participants()[0].system_prompt
    # A tool-call-only assistant message keeps its calls and carries no content.
    assert replay[2].content is None and [c.call_id for c in replay[2].tool_calls] == ["call-tc-a"]


def test_participant_without_system_prompt_has_no_system_message(world):
    replay = legacy_messages(world, participants()[1], RAW)
    assert replay[0].role is MessageRole.USER
    assert legacy_message_count(world, participants()[1]) == legacy_message_count(world, participants()[0]) - 1


def test_assembly_record_reports_the_legacy_baseline(world, run, counter):
    result = run(world)
    viewer = participants()[0]
    assert result.record.legacy_tokens == count_messages(legacy_messages(world, viewer, RAW), counter)
    assert result.record.legacy_message_count == len(legacy_messages(world, viewer, RAW))
    assert result.record.assembled_tokens == count_messages(result.messages, counter)
    assert result.record.assembled_message_count == len(result.messages)
    assert result.record.assembled_tokens < result.record.legacy_tokens


def test_legacy_count_uses_stored_result_tokens_not_payloads(world, counter):
    """Inflating an artifact's stored count moves the legacy count by exactly that much."""
    viewer = participants()[0]
    base = legacy_token_count(world, viewer, counter)
    bumped = world.model_copy(update={"artifacts": tuple(
        a.model_copy(update={"result_tokens": a.result_tokens + 1000}) if a.id == "art-c" else a
        for a in world.artifacts
    )})
    assert legacy_token_count(bumped, viewer, counter) == base + 1000


@pytest.mark.parametrize(
    ("content", "calls"),
    [
        ("plain text", ()),
        ("", (ToolCallRequest(call_id="c1", name="search", arguments={"q": "x", "n": 2}),)),
        ("both", (ToolCallRequest(call_id="c1", name="a", arguments={}),
                  ToolCallRequest(call_id="c2", name="b", arguments={"k": [1, 2]}))),
    ],
)
def test_count_message_convention(counter, content, calls):
    chat = ChatMessage(role=MessageRole.ASSISTANT, content=content or None, tool_calls=calls)
    expected = MESSAGE_OVERHEAD_TOKENS + (counter(content) if content else 0)
    expected += sum(counter(c.name) + counter(canonical_json(c.arguments)) for c in calls)
    assert count_message(chat, counter) == expected


def test_legacy_ignores_the_boundary_route(world, run):
    """Replay knows nothing of privacy: its count is the same whatever the route."""
    local = run(world, boundary(provider_route="local")).record.legacy_tokens
    public = run(world, boundary(provider_route="public-only")).record.legacy_tokens
    assert local == public
