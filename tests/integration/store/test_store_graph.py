"""Accounts, conversations, seq ordering, account scoping and unknown ids."""

from __future__ import annotations

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from policy.enums import MessageRole, RuntimeKind
from store import graph
from store.errors import IntegrityViolation, NotFoundError
from store.provenance import START_KINDS, get_record
from store.writes import NewMessage, NewToolCall
from storeworld import World

pytestmark = pytest.mark.integration


async def test_seq_orders_every_node_of_a_conversation(world: World) -> None:
    first = await world.say(world.root_branch_id, "one")
    async with world.sessions() as s, s.begin():
        call = await graph.record_tool_call(
            s, world.account_id, world.conversation_id, NewToolCall(
                branch_id=world.root_branch_id, participant_id=world.assistant_id, call_id=f"c-{first}", name="lookup",
                arguments={"q": 1}),
        )
        allocated = await graph.next_seq(s, world.account_id, world.conversation_id)
    second = await world.say(world.root_branch_id, "two")
    async with world.sessions() as s:
        m1 = await graph.get_message(s, world.account_id, first)
        m2 = await graph.get_message(s, world.account_id, second)
        conversation = await graph.get_conversation(s, world.account_id, world.conversation_id)
    assert (m1.seq, call.seq, allocated, m2.seq) == (1, 2, 3, 4)
    assert conversation.snapshot_seq == 4


async def test_create_conversation_is_idempotent_on_its_id(sessions: async_sessionmaker[AsyncSession]) -> None:
    async with sessions() as s, s.begin():
        account = await graph.create_account(s)
        assert await graph.create_account(s, account) == account
        first = await graph.create_conversation(s, account, title="a", conversation_id=f"conv-{account}")
        again = await graph.create_conversation(s, account, title="b", conversation_id=f"conv-{account}")
        branches = await graph.list_branches(s, account, first.id)
    assert again == first
    assert [b.id for b in branches] == [first.root_branch_id]


async def test_another_account_cannot_read_or_write_a_conversation(world: World) -> None:
    message_id = await world.say(world.root_branch_id, "private")
    async with world.sessions() as s, s.begin():
        other = await graph.create_account(s)
        with pytest.raises(NotFoundError) as caught:
            await graph.get_conversation(s, other, world.conversation_id)
        assert (caught.value.kind, caught.value.id) == ("conversation", world.conversation_id)
        for read, ident in [
            (graph.get_branch, world.root_branch_id),
            (graph.get_message, message_id),
            (graph.get_participant, world.assistant_id),
        ]:
            with pytest.raises(NotFoundError):
                await read(s, other, ident)
        with pytest.raises(NotFoundError):
            await graph.load_lineage(s, other, world.root_branch_id)
        with pytest.raises(NotFoundError):
            await graph.load_candidates(s, other, world.conversation_id, world.root_branch_id)
        assert await graph.list_participants(s, other, world.conversation_id) == []
        assert await graph.list_model_runs(s, other, world.conversation_id) == []
        with pytest.raises(NotFoundError):
            await graph.append_message(
                s, other, world.conversation_id, NewMessage(
                    branch_id=world.root_branch_id, role=MessageRole.USER, content="x")
            )


async def test_composite_keys_refuse_cross_account_references(world: World) -> None:
    """Even with a conversation of its own, account B cannot point at A's branch."""
    async with world.sessions() as s:
        async with s.begin():
            other = await graph.create_account(s)
            conversation = await graph.create_conversation(s, other)
        async with s.begin():
            with pytest.raises(NotFoundError) as caught:
                await graph.append_message(
                    s, other, conversation.id, NewMessage(
                        branch_id=world.root_branch_id, role=MessageRole.USER, content="x")
                )
            assert caught.value.kind == "branch"
            await s.rollback()


async def test_unknown_ids_raise_not_found(world: World) -> None:
    missing = "00000000-0000-0000-0000-000000000000"
    getters = [
        graph.get_conversation, graph.get_branch, graph.get_message, graph.get_participant,
        graph.get_model_run, graph.get_tool_call, graph.get_tool_call_by_call_id, graph.get_artifact,
        graph.get_tool_memory, graph.get_skill_state, graph.get_checkpoint, graph.get_context_assembly,
        graph.load_lineage,
    ]
    async with world.sessions() as s:
        for getter in getters:
            with pytest.raises(NotFoundError) as caught:
                await getter(s, world.account_id, missing)
            assert caught.value.id == missing, getter.__name__
        with pytest.raises(NotFoundError):
            await graph.get_account(s, missing)
        with pytest.raises(NotFoundError):
            await graph.next_seq(s, world.account_id, missing)
        # The one getter by kind (what the audit's why-not and the provenance walk read with).
        for kind in (*START_KINDS, "model_run", "branch", "participant", "no_such_kind"):
            with pytest.raises(NotFoundError):
                await get_record(s, world.account_id, kind, missing)
        assert (await get_record(s, world.account_id, "branch", world.root_branch_id)).id == world.root_branch_id


async def test_model_runs_start_finish_and_list(world: World) -> None:
    async with world.sessions() as s, s.begin():
        run = await graph.start_model_run(
            s, world.account_id, world.conversation_id, world.root_branch_id, world.assistant_id,
            runtime_kind=RuntimeKind.DISCUSSION, provider="scripted", model="m", workflow_id="wf-1",
        )
        again = await graph.start_model_run(
            s, world.account_id, world.conversation_id, world.root_branch_id, world.assistant_id,
            model_run_id=run.id,
        )
        message = await graph.append_message(
            s, world.account_id, world.conversation_id, NewMessage(
                branch_id=world.root_branch_id, role=MessageRole.ASSISTANT, content="done",
                author_participant_id=world.assistant_id, model_run_id=run.id),
        )
        finished = await graph.finish_model_run(
            s, world.account_id, run.id, status="succeeded", message_id=message.id, usage={"prompt_tokens": 7}
        )
        with pytest.raises(IntegrityViolation):
            await graph.finish_model_run(s, world.account_id, run.id, status="running")
    async with world.sessions() as s:
        runs = await graph.list_model_runs(s, world.account_id, world.conversation_id)
        everywhere = await graph.list_model_runs(s, world.account_id)
    assert again == run
    assert run.status == "running" and run.runtime_kind is RuntimeKind.DISCUSSION
    assert finished.status == "succeeded" and finished.message_id == message.id
    assert finished.usage == {"prompt_tokens": 7} and finished.finished_at is not None
    assert runs == [finished] == everywhere
