"""Tool memories and their links, user memories, skill states, checkpoints."""

from __future__ import annotations

import hashlib

import pytest

from policy.derive import derive_memory, memory_record
from policy.enums import PrivacyClass, ResolutionStatus, ToolCallStatus
from policy.tools import ToolSpec
from store import graph
from store.errors import IntegrityViolation, NotFoundError
from store.writes import NewToolCall
from storeworld import NOW, World, memory

pytestmark = pytest.mark.integration

async def test_tool_memory_round_trip_and_idempotence(world: World) -> None:
    record = memory(world, f"m-{world.account_id}", revalidate_with=("read_sheet",), stale_after=NOW)
    async with world.sessions() as s, s.begin():
        stored = await graph.insert_tool_memory(s, world.account_id, world.conversation_id, record)
        again = await graph.insert_tool_memory(s, world.account_id, world.conversation_id, record)
        loaded = await graph.get_tool_memory(s, world.account_id, record.id)
    assert stored == again == loaded
    assert stored.seq >= 1
    assert stored.model_copy(update={"seq": 0}) == record


async def test_supersession_and_conflicts_are_recorded_on_both_sides(world: World) -> None:
    ids = [f"m{i}-{world.account_id}" for i in range(4)]
    async with world.sessions() as s, s.begin():
        for memory_id in ids[:3]:
            await graph.insert_tool_memory(s, world.account_id, world.conversation_id, memory(world, memory_id))
        await graph.set_superseded(s, world.account_id, ids[0], ids[1])
        await graph.set_superseded(s, world.account_id, ids[0], ids[1])  # idempotent
        await graph.add_conflict(s, world.account_id, ids[1], ids[2])
        await graph.add_conflict(s, world.account_id, ids[2], ids[1])  # symmetric and idempotent
        # Links given at insert time go through the same path.
        fourth = await graph.insert_tool_memory(
            s, world.account_id, world.conversation_id, memory(world, ids[3], supersedes=(ids[2],))
        )
        with pytest.raises(IntegrityViolation):
            await graph.set_superseded(s, world.account_id, ids[3], ids[0])  # older cannot supersede newer
    async with world.sessions() as s:
        m0, m1, m2, m3 = [await graph.get_tool_memory(s, world.account_id, i) for i in ids]
    assert m0.superseded_by == ids[1] and m1.supersedes == (ids[0],)
    assert m1.conflicts_with == (ids[2],) and m2.conflicts_with == (ids[1],)
    assert m2.superseded_by == ids[3] and m3.supersedes == (ids[2],) == fourth.supersedes


async def test_memory_resolution(world: World) -> None:
    record = memory(world, f"r-{world.account_id}", subject_key=f"subject-{world.account_id}")
    async with world.sessions() as s, s.begin():
        await graph.insert_tool_memory(s, world.account_id, world.conversation_id, record)
        marked = await graph.mark_memory_resolution(
            s, world.account_id, record.id, ResolutionStatus.HASH_MISMATCH, repair_attempts=2
        )
        with pytest.raises(NotFoundError):
            await graph.mark_memory_resolution(s, world.account_id, "nope", ResolutionStatus.RESOLVED)
    assert (marked.resolution, marked.repair_attempts) == (ResolutionStatus.HASH_MISMATCH, 2)


async def test_related_memories_are_found_by_subject_or_shared_fact(world: World) -> None:
    tag = world.account_id
    same_subject = memory(world, f"s1-{tag}", subject_key=f"crm:{tag}")
    replaced = memory(world, f"s0-{tag}", subject_key=f"crm:{tag}")
    shares_a_fact = memory(world, f"f1-{tag}", subject_key=f"billing:{tag}",
                           payload={"facts": {f"C-{tag}.email": "a@x.io", f"C-{tag}.plan": "pro"}})
    unrelated = memory(world, f"u1-{tag}", subject_key=f"other:{tag}", payload={"facts": {"D-9.email": "d@x.io"}})
    async with world.sessions() as s, s.begin():
        for record in (replaced, same_subject, shares_a_fact, unrelated):
            await graph.insert_tool_memory(s, world.account_id, world.conversation_id, record)
        await graph.set_superseded(s, world.account_id, replaced.id, same_subject.id)
        found, statuses = await graph.related_memories(
            s, world.account_id, world.conversation_id, f"crm:{tag}", (f"C-{tag}.email", "Z.unknown"))
        by_subject_only, _ = await graph.related_memories(s, world.account_id, world.conversation_id,
                                                               f"crm:{tag}")
        other_account, _ = await graph.related_memories(s, "another-account", world.conversation_id,
                                                             f"crm:{tag}", (f"C-{tag}.email",))
    # A superseded memory of the subject is returned: whether it is live depends on the lineage (the
    # replacement may be on a sibling branch), which the caller knows. A memory sharing only a fact counts
    # while it is live everywhere; one sharing no subject and no fact key is not related.
    assert [m.id for m in found] == [replaced.id, same_subject.id, shares_a_fact.id]
    assert [m.id for m in by_subject_only] == [replaced.id, same_subject.id]
    assert other_account == [] and statuses == {}


async def test_a_memory_record_takes_its_graph_fields_from_the_artifact(world: World) -> None:
    payload = b"name,total\nacme,12\nglobex,30\n"
    async with world.sessions() as s, s.begin():
        call = await graph.record_tool_call(
            s, world.account_id, world.conversation_id, NewToolCall(
                branch_id=world.root_branch_id, participant_id=world.assistant_id, call_id=f"d-{world.account_id}",
                name="read_sheet", arguments={"sheet": "Q3"}, privacy=PrivacyClass.OAUTH),
        )
        artifact = await graph.insert_artifact(s, world.account_id, call.id, graph.ArtifactCapture(
            content_type="text/csv", sha256=hashlib.sha256(payload).hexdigest(), result_bytes=len(payload),
            arguments_bytes=14, storage="inline", inline_payload=payload, status=ToolCallStatus.SUCCEEDED,
        ))
        draft = derive_memory(
            ToolSpec(name="read_sheet"), artifact.id, {"sheet": "Q3"}, ToolCallStatus.SUCCEEDED,
            payload, content_type="text/csv", observed_at=NOW,
        )
        record = memory_record(draft, artifact, memory_id=f"dm-{world.account_id}")
        stored = await graph.insert_tool_memory(s, world.account_id, world.conversation_id, record)
        related, statuses = await graph.related_memories(s, world.account_id, world.conversation_id,
                                                              draft.subject_key)
    assert stored.source_artifact_ids == (artifact.id,)
    assert (stored.branch_id, stored.owner_participant_id, stored.privacy) == (
        world.root_branch_id, world.assistant_id, PrivacyClass.OAUTH,
    )
    assert stored.summary == draft.summary and stored.observed_at == artifact.captured_at
    assert stored.id in [m.id for m in related] and statuses[artifact.id] is ToolCallStatus.SUCCEEDED


async def test_user_memories_skill_states_and_checkpoints(world: World) -> None:
    async with world.sessions() as s, s.begin():
        note = await graph.put_user_memory(s, world.account_id, "prefers EUR", user_memory_id=f"u-{world.account_id}")
        same = await graph.put_user_memory(s, world.account_id, "ignored", user_memory_id=note.id)
        later = await graph.put_user_memory(s, world.account_id, "lives in Lyon", participant_id=world.assistant_id)
        listed = await graph.list_user_memories(s, world.account_id)

        first = await graph.put_skill_state(
            s, world.account_id, world.conversation_id, world.root_branch_id, world.assistant_id,
            "budgeting", state={"step": 1},
        )
        second = await graph.put_skill_state(
            s, world.account_id, world.conversation_id, world.root_branch_id, world.assistant_id,
            "budgeting", state={"step": 2}, active=False,
        )
        checkpoint = await graph.put_checkpoint(
            s, world.account_id, world.conversation_id, world.root_branch_id, world.assistant_id,
            "tool_loop", state={"done": 2, "next": "summarise"}, references=("m-1",),
            checkpoint_id=f"k-{world.account_id}",
        )
        checkpoint_again = await graph.put_checkpoint(
            s, world.account_id, world.conversation_id, world.root_branch_id, world.assistant_id,
            "tool_loop", state={}, checkpoint_id=checkpoint.id,
        )
        with pytest.raises(IntegrityViolation):
            async with s.begin_nested():
                await graph.put_checkpoint(
                    s, world.account_id, world.conversation_id, world.root_branch_id, world.assistant_id,
                    "bogus", state={},  # type: ignore[arg-type]
                )
    assert same == note and (note.seq, later.seq) == (1, 2)
    assert [m.text for m in listed] == ["prefers EUR", "lives in Lyon"]
    assert second.id == first.id and second.seq > first.seq
    assert (second.state, second.active) == ({"step": 2}, False)
    assert checkpoint_again == checkpoint and checkpoint.references == ("m-1",)
