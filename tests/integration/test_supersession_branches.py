"""Supersession across branches (issue 11, class 3).

A memory written before a fork is superseded separately on each branch: a
newer result on one branch replaces it there and nowhere else, and a newer
result on a sibling replaces it on that sibling, whichever came first. With a
single ``superseded_by`` pointer, the second branch's result superseded
nothing (the pre-fork memory no longer looked live) and the old value read as
current beside the new one.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from activities.context import assemble_context
from activities.deps import GraphDeps
from activities.ingest import ToolOutcome, begin_tool_call, ingest_tool_result
from harness.scenarios.runner import context_text
from policy.enums import MessageRole, RuntimeKind, ToolCallStatus
from policy.records import GenerationBoundary
from policy.tools import ToolCatalog, ToolSpec
from store import branches, conversations, messages
from store.writes import NewMessage, NewToolCall

pytestmark = pytest.mark.integration

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
CATALOG = ToolCatalog(tools=(ToolSpec(name="crm.get_account", result_kind="json", key_args=("account_id",)),))


async def test_a_pre_fork_memory_is_superseded_on_each_branch_that_has_a_newer_result(graph_deps: GraphDeps) -> None:
    deps = replace(graph_deps, catalog=CATALOG)
    async with deps.sessions() as session, session.begin():
        account_id = await conversations.create_account(session, name="supersession across branches")
        conversation = await conversations.create_conversation(session, account_id, title="t")
        assistant = await conversations.add_participant(session, account_id, conversation.id, name="Assistant",
                                                        provider="scripted", model="m")
    root = conversation.root_branch_id

    async def say(branch_id: str, text: str) -> str:
        async with deps.sessions() as session, session.begin():
            return (await messages.append_message(session, account_id, conversation.id, NewMessage(
                branch_id=branch_id, role=MessageRole.USER, content=text))).id

    async def tier(branch_id: str, key: str, value: str):
        call = await begin_tool_call(deps, account_id, conversation.id, NewToolCall(
            branch_id=branch_id, participant_id=assistant.id, call_id=f"call_{key}", name="crm.get_account",
            arguments={"account_id": "A-1"}, runtime_kind=RuntimeKind.CHAT, at=T0))
        ingested = await ingest_tool_result(deps, account_id, call.id, ToolOutcome(
            status=ToolCallStatus.SUCCEEDED, result=f'{{"id":"A-1","tier":"{value}"}}'.encode()), captured_at=T0)
        return ingested.memory

    async def context(branch_id: str) -> str:
        boundary = GenerationBoundary(account_id=account_id, conversation_id=conversation.id, branch_id=branch_id,
                                      participant_id=assistant.id, runtime_kind=RuntimeKind.CHAT,
                                      provider_route="local", now=T0 + timedelta(minutes=5))
        return context_text((await assemble_context(deps, boundary)).result.messages)

    before = await tier(root, "root", "silver")
    fork_at = await say(root, "Which tier is A-1?")
    async with deps.sessions() as session, session.begin():
        left = (await branches.fork_branch(session, account_id, conversation.id, root, fork_at, name="left")).id
        right = (await branches.fork_branch(session, account_id, conversation.id, root, fork_at, name="right")).id

    on_left = await tier(left, "left", "gold")
    on_right = await tier(right, "right", "platinum")
    assert on_left.supersedes == (before.id,)
    assert on_right.supersedes == (before.id,), "the sibling's supersession hid the pre-fork memory from linking"

    await say(left, "And now?")
    await say(right, "And now?")
    left_text, right_text, root_text = await context(left), await context(right), await context(root)
    assert "tier=gold" in left_text and "tier=silver" not in left_text and "platinum" not in left_text
    assert "tier=platinum" in right_text and "tier=silver" not in right_text and "gold" not in right_text
    # The root never saw either newer result: its memory is current there.
    assert "tier=silver" in root_text and "gold" not in root_text and "platinum" not in root_text


async def test_random_fork_and_refresh_histories_show_each_branch_exactly_its_lineages_newest_value(
        graph_deps: GraphDeps) -> None:
    """The hardening suite's branches part, on a few seeded histories: fresh and continued epochs alike."""
    from harness.harden.branches import run_history

    checked, violations = 0, []
    for seed in range(6):
        count, found = await run_history(graph_deps, seed)
        checked += count
        violations += found
    assert checked >= 30
    assert not violations, violations[:3]
