"""Context assemblies: save, load, link to the model run."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from policy.enums import DecisionOutcome, OmissionReason, RuntimeKind
from policy.records import ContextAssemblyRecord, EpochRecord, GenerationBoundary, PolicyDecisionRecord
from store import graph
from store.errors import IntegrityViolation, NotFoundError
from store.records import AssemblyTimings
from storeworld import World

pytestmark = pytest.mark.integration


def _record(snapshot_seq: int) -> ContextAssemblyRecord:
    return ContextAssemblyRecord(
        policy_version="dossier-default/1#abc",
        assembler_version="1",
        snapshot_seq=snapshot_seq,
        legacy_message_count=12,
        assembled_message_count=5,
        legacy_tokens=4000,
        assembled_tokens=900,
        token_budget=2048,
        selected_refs=("message:m1", "memory:x"),
        rehydrated_refs=("artifact:a1",),
        omitted_counts={"outside_lineage": 3, "budget": 1},
        content_sha256="f" * 64,
    )


DECISIONS = (
    PolicyDecisionRecord(
        kind="lineage", subject_ref="message:m9", outcome=DecisionOutcome.OMITTED,
        reason="sibling branch", omission=OmissionReason.OUTSIDE_LINEAGE, policy_version="p",
    ),
    PolicyDecisionRecord(
        kind="budget", subject_ref="memory:x", outcome=DecisionOutcome.INCLUDED, reason="fits", policy_version="p",
    ),
)


async def test_save_and_load_round_trip(world: World) -> None:
    messages = [{"role": "system", "content": "You are Analyst."}, {"role": "user", "content": "hi"}]
    async with world.sessions() as s, s.begin():
        run = await graph.start_model_run(
            s, world.account_id, world.conversation_id, world.root_branch_id, world.assistant_id
        )
        boundary = GenerationBoundary(
            account_id=world.account_id, conversation_id=world.conversation_id, branch_id=world.root_branch_id,
            participant_id=world.assistant_id, runtime_kind=RuntimeKind.CHAT, provider_route="local",
            now=datetime(2026, 1, 5, tzinfo=UTC), model_run_id=run.id,
        )
        timings = AssemblyTimings(graph_query_ms=3.5, policy_ms=1.25, serialise_ms=0.5)
        assembly_id, created = await graph.save_context_assembly(
            s, world.account_id, boundary, _record(7), list(DECISIONS), messages, timings=timings
        )
        again, created_again = await graph.save_context_assembly(
            s, world.account_id, boundary, _record(8), [], [], timings=timings, assembly_id=assembly_id
        )
        with pytest.raises(IntegrityViolation):
            await graph.save_context_assembly(
                s, "someone-else", boundary, _record(7), [], [], timings=timings
            )
    async with world.sessions() as s:
        stored = await graph.get_context_assembly(s, world.account_id, assembly_id, with_messages=True)
        light = await graph.get_context_assembly(s, world.account_id, assembly_id)
        listed = await graph.list_context_assemblies(s, world.account_id, model_run_id=run.id)
        linked = await graph.get_model_run(s, world.account_id, run.id)
        with pytest.raises(NotFoundError):
            other = await graph.create_account(s)
            await graph.get_context_assembly(s, other, assembly_id)
    assert again == assembly_id
    assert created and not created_again  # the retry found the first write: what the metrics count once
    assert stored.record == _record(7)
    assert stored.decisions == DECISIONS
    assert stored.messages == tuple(messages) and light.messages is None
    assert stored.timings == timings
    assert (stored.branch_id, stored.participant_id, stored.model_run_id, stored.provider_route) == (
        world.root_branch_id, world.assistant_id, run.id, "local",
    )
    assert stored.generation_at == boundary.now and stored.runtime_kind is RuntimeKind.CHAT
    assert listed == [light]
    assert linked.context_assembly_id == assembly_id


def _epoch(boundary_seq: int) -> EpochRecord:
    return EpochRecord(epoch_id=f"{boundary_seq}-e", started=True, reason="test", boundary_seq=boundary_seq,
                       started_snapshot_seq=boundary_seq, prefix_messages=2, prefix_digest="d" * 64,
                       prefix_budget=8192, prefix_items=("system#abc",), cache_breakpoints=(0, 1))


async def test_the_previous_assembly_is_the_participants_latest_before_the_snapshot(world: World) -> None:
    """An epoch continues from the same participant's latest call on the branch, never from itself or others."""
    said = await world.say(world.root_branch_id, "hello")
    async with world.sessions() as s, s.begin():
        fork = await graph.fork_branch(s, world.account_id, world.conversation_id, world.root_branch_id, said)

        def boundary(participant: str, branch: str = world.root_branch_id) -> GenerationBoundary:
            return GenerationBoundary(
                account_id=world.account_id, conversation_id=world.conversation_id, branch_id=branch,
                participant_id=participant, runtime_kind=RuntimeKind.CHAT, provider_route="local",
                now=datetime(2026, 1, 5, tzinfo=UTC))

        mine = boundary(world.assistant_id)
        await graph.save_context_assembly(s, world.account_id, mine, _record(5), [], [])  # before epochs
        await graph.save_context_assembly(s, world.account_id, mine,
                                          _record(7).model_copy(update={"epoch": _epoch(6)}), [], [])
        await graph.save_context_assembly(s, world.account_id, mine,
                                          _record(9).model_copy(update={"epoch": _epoch(8)}), [], [])
        await graph.save_context_assembly(s, world.account_id, boundary(world.user_id),
                                          _record(8).model_copy(update={"epoch": _epoch(8)}), [], [])
        await graph.save_context_assembly(s, world.account_id, boundary(world.assistant_id, fork.id),
                                          _record(8).model_copy(update={"epoch": _epoch(8)}), [], [])
    async with world.sessions() as s:
        async def previous(before: int, account: str = world.account_id, branch: str = world.root_branch_id):
            found = await graph.previous_assembly(s, account, branch, world.assistant_id, before_seq=before)
            return None if found is None else (found.snapshot_seq, found.epoch.epoch_id)

        assert await previous(20) == (9, "8-e")
        assert await previous(9) == (7, "6-e")  # strictly before: an assembly of snapshot 9 never continues itself
        assert await previous(8) == (7, "6-e")  # the user's assembly at 8 belongs to another participant
        assert await previous(7) is None  # the one before predates epochs: the next call starts a new one
        assert await previous(20, branch=fork.id) == (8, "8-e")
        other = await graph.create_account(s)
        assert await previous(20, account=other) is None
    async with world.sessions() as s:
        found = await graph.previous_assembly(s, world.account_id, world.root_branch_id, world.assistant_id,
                                              before_seq=10)
    assert found is not None and found.policy_version == "dossier-default/1#abc"
    assert (found.branch_id, found.provider_route, found.runtime_kind) == (world.root_branch_id, "local",
                                                                           RuntimeKind.CHAT)
    assert found.epoch == _epoch(8)
