"""Candidate loading: lineage, scope, limits and snapshots."""

from __future__ import annotations

import hashlib

import pytest

from policy.enums import MessageRole, ToolCallStatus, VisibilityScope
from store import graph
from store.candidates import CandidateLimits
from store.errors import NotFoundError
from store.writes import NewToolCall
from storeworld import World, memory

pytestmark = pytest.mark.integration


async def _tool_call(world: World, branch_id: str, call_id: str, **kwargs: object):  # noqa: ANN202
    async with world.sessions() as s, s.begin():
        return await graph.record_tool_call(
            s, world.account_id, world.conversation_id, NewToolCall(
                branch_id=branch_id, participant_id=world.assistant_id, call_id=f"{world.account_id}:{call_id}",
                name="lookup", arguments={"q": call_id}, **kwargs),  # type: ignore[arg-type]
        )


async def _artifact(world: World, call_id: str, **kwargs: object):  # noqa: ANN202
    payload = call_id.encode()
    async with world.sessions() as s, s.begin():
        return await graph.insert_artifact(s, world.account_id, call_id, graph.ArtifactCapture(
            content_type="text/plain", sha256=hashlib.sha256(payload).hexdigest(),
            result_bytes=len(payload), arguments_bytes=2, storage="inline", inline_payload=payload,
            **kwargs,  # type: ignore[arg-type]
        ))


async def _memory(world: World, memory_id: str, branch_id: str, **fields: object):  # noqa: ANN202
    async with world.sessions() as s, s.begin():
        return await graph.insert_tool_memory(
            s, world.account_id, world.conversation_id,
            memory(world, f"{memory_id}-{world.account_id}", branch_id=branch_id, **fields),
        )


async def _fork(world: World, parent: str, at: str, name: str) -> str:
    async with world.sessions() as s, s.begin():
        return (await graph.fork_branch(s, world.account_id, world.conversation_id, parent, at, name=name)).id


async def _load(world: World, branch_id: str, limits: CandidateLimits | None = None, **kwargs: object):  # noqa: ANN202
    async with world.sessions() as s:
        return await graph.load_candidates(
            s, world.account_id, world.conversation_id, branch_id, limits or CandidateLimits(), **kwargs  # type: ignore[arg-type]
        )


async def test_lineage_scope_and_sharing(world: World) -> None:
    root = world.root_branch_id
    r1 = await world.say(root, "r1")
    m_before = await _memory(world, "before", root)
    r2 = await world.say(root, "r2", role=MessageRole.ASSISTANT, author_participant_id=world.assistant_id)
    a = await _fork(world, root, r2, "a")
    b = await _fork(world, root, r1, "b")
    r3 = await world.say(root, "r3: after a's fork point")
    m_after = await _memory(world, "after", root)
    a1 = await world.say(a, "a1")
    b1 = await world.say(b, "b1: sibling branch")
    b_conv = await world.say(b, "b2: for everyone", visibility=VisibilityScope.CONVERSATION)
    b_shared_msg = await world.say(b, "b3: shared", shared_with=[world.assistant_id])
    b_private_call = await _tool_call(world, b, "b-private")
    b_shared_call = await _tool_call(world, b, "b-shared", shared_with=[world.assistant_id])
    a_call = await _tool_call(world, a, "a-call")
    b_artifact = await _artifact(world, b_private_call.id)
    b_conv_artifact = await _artifact(world, b_shared_call.id, visibility=VisibilityScope.CONVERSATION)
    a_artifact = await _artifact(world, a_call.id)
    b_memory = await _memory(world, "b-mem", b)
    b_conv_memory = await _memory(world, "b-conv-mem", b, visibility=VisibilityScope.CONVERSATION)
    async with world.sessions() as s, s.begin():
        skill = await graph.put_skill_state(
            s, world.account_id, world.conversation_id, a, world.assistant_id, "plan", state={"step": 1}
        )
        b_skill = await graph.put_skill_state(
            s, world.account_id, world.conversation_id, b, world.assistant_id, "plan", state={"step": 9}
        )
        checkpoint = await graph.put_checkpoint(
            s, world.account_id, world.conversation_id, a, world.assistant_id, "tool_loop", state={"done": 1}
        )
        await graph.put_checkpoint(
            s, world.account_id, world.conversation_id, b, world.assistant_id, "tool_loop", state={"done": 7}
        )
        user_memory = await graph.put_user_memory(s, world.account_id, "prefers short answers")

    candidates = await _load(world, a)

    assert [m.id for m in candidates.messages] == [r1, r2, a1, b_conv, b_shared_msg]
    assert {r3, b1}.isdisjoint(m.id for m in candidates.messages)
    assert [c.id for c in candidates.tool_calls] == [b_shared_call.id, a_call.id]
    assert [x.id for x in candidates.artifacts] == [b_conv_artifact.id, a_artifact.id]
    assert b_artifact.id not in {x.id for x in candidates.artifacts}
    assert [m.id for m in candidates.tool_memories] == [m_before.id, b_conv_memory.id]
    assert {m_after.id, b_memory.id}.isdisjoint(m.id for m in candidates.tool_memories)
    assert [x.id for x in candidates.skill_states] == [skill.id] and b_skill.id != skill.id
    assert [x.id for x in candidates.checkpoints] == [checkpoint.id]
    assert {p.id for p in candidates.participants} == {world.user_id, world.assistant_id}
    assert [u.id for u in candidates.user_memories] == [user_memory.id]
    assert candidates.lineage.active_branch_id == a
    async with world.sessions() as s:
        conversation = await graph.get_conversation(s, world.account_id, world.conversation_id)
    assert candidates.snapshot_seq == conversation.snapshot_seq


async def test_limits_bound_each_pool_but_keep_pinned_records(world: World) -> None:
    root = world.root_branch_id
    directive = await world.say(
        root, "Moderator: keep answers under 100 words", is_directive=True, author_participant_id=world.user_id
    )
    stuck = await _tool_call(world, root, "stuck", status=ToolCallStatus.DEFERRED)
    critical = await _tool_call(world, root, "critical", retry_critical=True, status=ToolCallStatus.SUCCEEDED)
    messages = [await world.say(root, f"m{i}") for i in range(6)]
    calls = [await _tool_call(world, root, f"ok{i}", status=ToolCallStatus.SUCCEEDED) for i in range(4)]
    artifacts = [await _artifact(world, call.id) for call in calls]
    old = await _memory(world, "old", root)
    new = await _memory(world, "new", root, supersedes=(old.id,))
    newest_superseded = await _memory(world, "x1", root)
    newest = await _memory(world, "x2", root, supersedes=(newest_superseded.id,))

    limits = CandidateLimits(
        max_messages=2, max_directives=5, max_tool_calls=1, max_pinned_tool_calls=5, max_artifacts=2, max_memories=3,
    )
    candidates = await _load(world, root, limits)

    assert [m.id for m in candidates.messages] == [directive, *messages[-2:]]
    # A succeeded retry-critical call is resolved: it is not pinned (issue 11, class 4).
    assert [c.id for c in candidates.tool_calls] == [stuck.id, calls[-1].id]
    assert critical.id not in [c.id for c in candidates.tool_calls]
    assert [x.id for x in candidates.artifacts] == [a.id for a in artifacts[-2:]]
    # Live memories first (all three fit), then superseded ones while room remains.
    assert [m.id for m in candidates.tool_memories] == [new.id, newest_superseded.id, newest.id]
    assert candidates.tool_memories[1].superseded_by == newest.id

    tight = await _load(world, root, CandidateLimits(max_memories=2, max_directives=0, max_messages=1))
    assert [m.id for m in tight.tool_memories] == [new.id, newest.id]
    assert [m.id for m in tight.messages] == [messages[-1]]


async def test_memory_citations_and_requested_artifacts_are_loaded_whatever_their_age(world: World) -> None:
    root = world.root_branch_id
    old_call = await _tool_call(world, root, "old")
    old_artifact = await _artifact(world, old_call.id)
    requested_call = await _tool_call(world, root, "requested")
    requested = await _artifact(world, requested_call.id)
    for i in range(3):
        await _artifact(world, (await _tool_call(world, root, f"n{i}")).id)
    await _memory(world, "cites", root, source_artifact_ids=(old_artifact.id,))
    candidates = await _load(world, root, CandidateLimits(max_artifacts=1), extra_artifact_ids=[requested.id, "nope"])
    ids = [x.id for x in candidates.artifacts]
    assert old_artifact.id in ids and requested.id in ids and len(ids) == 3


async def test_the_same_snapshot_loads_the_same_candidates(world: World) -> None:
    root = world.root_branch_id
    await world.say(root, "hello")
    call = await _tool_call(world, root, "pending")
    old = await _memory(world, "old", root)
    other = await _memory(world, "other", root)
    before = await _load(world, root)

    # The graph moves on: new nodes, a resolved call, a superseded and a conflicting memory.
    await world.say(root, "later")
    async with world.sessions() as s, s.begin():
        await graph.update_tool_call(s, world.account_id, call.id, status=ToolCallStatus.SUCCEEDED)
    newer = await _memory(world, "newer", root, supersedes=(old.id,), conflicts_with=(other.id,))
    now = await _load(world, root)
    again = await _load(world, root, up_to_seq=before.snapshot_seq)

    assert again == before
    assert now != before and now.snapshot_seq > before.snapshot_seq
    assert before.tool_calls[0].status is ToolCallStatus.PENDING
    assert now.tool_calls[0].status is ToolCallStatus.SUCCEEDED
    now_memories = {m.id: m for m in now.tool_memories}
    assert now_memories[old.id].superseded_by == newer.id
    assert now_memories[other.id].conflicts_with == (newer.id,)
    assert {m.id: m for m in again.tool_memories}[other.id].conflicts_with == ()
    # A snapshot in the future is the present.
    assert await _load(world, root, up_to_seq=10**9) == now


async def test_candidates_for_a_branch_of_another_conversation_are_refused(world: World) -> None:
    async with world.sessions() as s, s.begin():
        other = await graph.create_conversation(s, world.account_id)
    async with world.sessions() as s:
        with pytest.raises(NotFoundError):
            await graph.load_candidates(s, world.account_id, world.conversation_id, other.root_branch_id)


async def test_failures_never_push_an_open_call_out_of_the_pool(world: World) -> None:
    """Issue 11, class 4: the pinned pool kept the newest 100 pinned calls, succeeded retry-critical ones
    included, so enough newer failures hid an older deferred call with no decision saying so."""
    root = world.root_branch_id
    waiting = await _tool_call(world, root, "waiting", status=ToolCallStatus.DEFERRED)
    resolved = [await _tool_call(world, root, f"resolved{i}", retry_critical=True, status=ToolCallStatus.SUCCEEDED)
                for i in range(3)]
    failed = [await _tool_call(world, root, f"failed{i}", status=ToolCallStatus.FAILED)
              for i in range(8)]
    limits = CandidateLimits(max_tool_calls=2, max_pinned_tool_calls=5)

    candidates = await _load(world, root, limits)

    ids = [c.id for c in candidates.tool_calls]
    assert waiting.id in ids
    assert not {c.id for c in resolved} & set(ids), "a succeeded retry-critical call is resolved, not pinned"
    assert [c.id for c in candidates.tool_calls if c.status is ToolCallStatus.FAILED] == [c.id for c in failed[-5:]]
    assert (candidates.unloaded_open_calls, candidates.unloaded_failed_calls) == (0, 3)

    tight = await _load(world, root, CandidateLimits(max_tool_calls=0, max_open_tool_calls=0))
    assert waiting.id not in [c.id for c in tight.tool_calls]
    assert tight.unloaded_open_calls == 1
