"""Forks, lineage walks and branch cycles."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from policy.records import LineageStep
from store import graph
from store._sql import translate
from store.errors import BranchCycleError, InvalidForkPointError, NotFoundError
from storeworld import World

pytestmark = pytest.mark.integration


async def _three_levels(world: World) -> tuple[str, str, str, dict[str, str]]:
    """root: r1 r2 r3 | a (forked at r2): a1 a2 | b (forked at a1): b1."""
    ids = {}
    for name in ("r1", "r2", "r3"):
        ids[name] = await world.say(world.root_branch_id, name)
    async with world.sessions() as s, s.begin():
        a = await graph.fork_branch(
            s, world.account_id, world.conversation_id, world.root_branch_id, ids["r2"], name="a"
        )
    for name in ("a1", "a2"):
        ids[name] = await world.say(a.id, name)
    async with world.sessions() as s, s.begin():
        b = await graph.fork_branch(s, world.account_id, world.conversation_id, a.id, ids["a1"], name="b")
    ids["b1"] = await world.say(b.id, "b1")
    return world.root_branch_id, a.id, b.id, ids


async def test_three_level_lineage_has_fork_points_as_until_seq(world: World) -> None:
    root, a, b, ids = await _three_levels(world)
    async with world.sessions() as s:
        lineage = await graph.load_lineage(s, world.account_id, b)
        r2 = await graph.get_message(s, world.account_id, ids["r2"])
        a1 = await graph.get_message(s, world.account_id, ids["a1"])
        branch_b = await graph.get_branch(s, world.account_id, b)
    assert lineage.steps == (
        LineageStep(branch_id=root, until_seq=r2.seq),
        LineageStep(branch_id=a, until_seq=a1.seq),
        LineageStep(branch_id=b, until_seq=None),
    )
    assert (branch_b.parent_branch_id, branch_b.fork_message_id, branch_b.fork_seq) == (a, ids["a1"], a1.seq)


async def test_fork_at_an_inherited_message_cuts_the_grandparent_there(world: World) -> None:
    root, a, _, ids = await _three_levels(world)
    async with world.sessions() as s, s.begin():
        # r1 is on the root branch but in a's lineage: a legal fork point for a child of a.
        c = await graph.fork_branch(s, world.account_id, world.conversation_id, a, ids["r1"], name="c")
        lineage = await graph.load_lineage(s, world.account_id, c.id)
        r1 = await graph.get_message(s, world.account_id, ids["r1"])
    assert [(step.branch_id, step.until_seq) for step in lineage.steps] == [
        (root, r1.seq),  # not r2: c forked before it
        (a, r1.seq),
        (c.id, None),
    ]


async def test_fork_point_must_be_in_the_parent_lineage(world: World) -> None:
    root, a, b, ids = await _three_levels(world)
    async with world.sessions() as s:
        with pytest.raises(InvalidForkPointError):  # after a's fork point on root
            await graph.fork_branch(s, world.account_id, world.conversation_id, a, ids["r3"])
        with pytest.raises(InvalidForkPointError):  # on a sibling branch
            await graph.fork_branch(s, world.account_id, world.conversation_id, b, ids["a2"])
        with pytest.raises(NotFoundError):
            await graph.fork_branch(s, world.account_id, world.conversation_id, root, "no-such-message")


async def test_database_refuses_a_cyclic_update_and_the_reader_detects_one(world: World) -> None:
    root, a, b, _ = await _three_levels(world)
    async with world.sessions() as s, s.begin():
        make_cycle = text("UPDATE branches SET parent_branch_id = :b, fork_seq = 1 WHERE id = :root")
        params = {"b": b, "root": root}
        with pytest.raises(DBAPIError) as caught:
            async with s.begin_nested():
                await s.execute(make_cycle, params)
        refused = translate(caught.value)
        assert isinstance(refused, BranchCycleError)
        assert refused.branch_ids == (root, b, a, root)

        # Corrupt data the trigger would have stopped: bypass it for this transaction.
        await s.execute(text("ALTER TABLE branches DISABLE TRIGGER branches_no_cycle"))
        await s.execute(make_cycle, params)
        await s.execute(text("ALTER TABLE branches ENABLE TRIGGER branches_no_cycle"))
        for start in (b, a, root):
            with pytest.raises(BranchCycleError) as cycle:
                await graph.load_lineage(s, world.account_id, start)
            assert set(cycle.value.branch_ids) == {root, a, b}
            assert cycle.value.branch_ids[0] == start
        await s.rollback()
    async with world.sessions() as s:
        assert len((await graph.load_lineage(s, world.account_id, b)).steps) == 3


async def test_reparent_refuses_a_cycle_and_moves_a_branch(world: World) -> None:
    root, a, b, ids = await _three_levels(world)
    async with world.sessions() as s, s.begin():
        with pytest.raises(BranchCycleError) as caught:
            await graph.reparent_branch(s, world.account_id, a, b, ids["b1"])
        assert caught.value.branch_ids == (a, b, a)
        moved = await graph.reparent_branch(s, world.account_id, b, root, ids["r1"])
        lineage = await graph.load_lineage(s, world.account_id, b)
        r1 = await graph.get_message(s, world.account_id, ids["r1"])
    assert moved.parent_branch_id == root and moved.fork_seq == r1.seq
    assert [step.branch_id for step in lineage.steps] == [root, b]


async def test_the_first_user_message_is_found_past_the_candidate_pool_and_through_forks(
        world: World, graph_deps) -> None:
    """250 messages on the root, more than the 200-message pool the client once read it from; then a fork."""
    from dossier.client import ClientError, DossierClient
    from dossier.settings import Settings
    from policy.enums import MessageRole

    client = DossierClient(deps=graph_deps, temporal=None, settings=Settings(_env_file=None),  # type: ignore[arg-type]
                           account_id=world.account_id, providers=lambda spec: None, agents=None)
    with pytest.raises(ClientError, match="no user message"):
        await client.first_user_message(world.conversation_id, world.root_branch_id)
    await world.say(world.root_branch_id, "the system speaks first", role=MessageRole.ASSISTANT)
    first = await world.say(world.root_branch_id, "the opening request")
    said = [await world.say(world.root_branch_id, f"message {n}",
                            role=MessageRole.USER if n % 2 else MessageRole.ASSISTANT) for n in range(248)]
    assert await client.first_user_message(world.conversation_id, world.root_branch_id) == first
    async with world.sessions() as s, s.begin():
        fork = await graph.fork_branch(s, world.account_id, world.conversation_id, world.root_branch_id, said[10],
                                       name="fork")
    assert await client.first_user_message(world.conversation_id, fork.id) == first
    with pytest.raises(NotFoundError):
        await client.first_user_message(world.conversation_id, "00000000-0000-4000-8000-000000000000")


async def test_the_transcript_is_the_whole_lineage_past_the_candidate_pool(world: World, graph_deps) -> None:
    """A branch of 250 messages forked from a root of 250: the transcript once showed the newest 200 only."""
    from dossier.client import DossierClient
    from dossier.settings import Settings
    from policy.enums import MessageRole

    client = DossierClient(deps=graph_deps, temporal=None, settings=Settings(_env_file=None),  # type: ignore[arg-type]
                           account_id=world.account_id, providers=lambda spec: None, agents=None)
    said = [await world.say(world.root_branch_id, f"root {n}") for n in range(250)]
    async with world.sessions() as s, s.begin():
        fork = await graph.fork_branch(s, world.account_id, world.conversation_id, world.root_branch_id, said[99],
                                       name="fork")
    for n in range(150):
        await world.say(fork.id, f"fork {n}", role=MessageRole.ASSISTANT, author_participant_id=world.assistant_id)
    await world.say(world.root_branch_id, "root after the fork")

    transcript = await client.transcript(world.conversation_id, fork.id)
    assert [text for _, text in transcript] == [f"root {n}" for n in range(100)] + [f"fork {n}" for n in range(150)]
    async with world.sessions() as s:
        assistant = (await graph.get_participant(s, world.account_id, world.assistant_id)).name
    assert {speaker for speaker, text in transcript if text.startswith("fork")} == {assistant}
    root = await client.transcript(world.conversation_id, world.root_branch_id)
    assert len(root) == 251 and root[-1] == ("user", "root after the fork")
    with pytest.raises(NotFoundError):
        await client.transcript("00000000-0000-4000-8000-000000000000", fork.id)
