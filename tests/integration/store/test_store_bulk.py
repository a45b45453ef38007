"""Bulk writes (store.bulk): the same rows as the single-row writes, seq for seq, and the same errors."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from policy.derive import MemoryDraft, memory_record
from policy.enums import FreshnessClass, MessageRole, PrivacyClass, ToolCallStatus, VisibilityScope
from policy.records import Locator, canonical_json
from store import graph
from store.bulk import ANALYZE_AFTER_ROWS, GraphBatch, delete_account
from store.errors import IntegrityViolation, NotFoundError
from store.tools import ArtifactCapture
from store.writes import NewMessage, NewToolCall
from storeworld import NOW, World, memory

pytestmark = pytest.mark.integration

Step = tuple[str, tuple[Any, ...], dict[str, Any]]

_CONVERSATION_SCOPED = {"append_message", "start_model_run", "record_tool_call", "insert_tool_memory"}
"""Single-row functions that take ``conversation_id`` after ``account_id``."""


async def new_world(sessions: async_sessionmaker[AsyncSession], tag: str = "") -> World:
    # Participants created in one transaction share created_at and list by id: tagged ids keep the order.
    tag = tag or uuid.uuid4().hex
    async with sessions() as s, s.begin():
        account_id = await graph.create_account(s, name="bulk")
        conversation = await graph.create_conversation(s, account_id, title="bulk")
        user = await graph.add_participant(s, account_id, conversation.id, name="User", role="user",
                                           participant_id=f"{tag}-user")
        assistant = await graph.add_participant(s, account_id, conversation.id, name="Analyst", provider="scripted",
                                                model="m", participant_id=f"{tag}-assistant")
    return World(account_id, conversation.id, conversation.root_branch_id, user.id, assistant.id, sessions)


def _payload(rows: int) -> dict[str, Any]:
    body = json.dumps({"sheet": "Q3", "rows": [{"id": k, "total": 10 * k} for k in range(rows)]}).encode()
    return {"inline_payload": body, "sha256": hashlib.sha256(body).hexdigest(), "result_bytes": len(body),
            "content_type": "application/json", "storage": "inline"}


def exchange(world: World, tag: str) -> list[Step]:
    """One turn with two tool calls (one retried until it fails), memories and links, in live order."""
    b, bot = world.root_branch_id, world.assistant_id
    run, args = f"{tag}-run", {"sheet": "Q3"}
    draft = MemoryDraft(
        subject_key='read_sheet:{"sheet":"Q3"}', title="read_sheet(sheet=Q3)", summary="3 rows, total 30",
        payload={"rows": 3}, confidence=0.9, confidence_source="derived", rationale="parsed", freshness=FreshnessClass.BOUNDED,
        stale_after=NOW + timedelta(hours=1), revalidate_with=("read_sheet",),
        locators=(Locator(artifact_id=f"{tag}-a1", kind="json_pointer", pointer="/rows"),),
    )
    failure = memory(world, f"{tag}-mem2", source_artifact_ids=(f"{tag}-a2",), observed_at=NOW + timedelta(seconds=9),
                     summary="failed: upstream 503", supersedes=(f"{tag}-mem1",), privacy=PrivacyClass.PUBLIC,
                     shared_with=(world.user_id,))
    return [
        ("start_model_run", (b, bot), {"provider": "scripted", "model": "m", "model_run_id": run}),
        ("append_message", (NewMessage(branch_id=b, role=MessageRole.USER, content="Q3 totals?",
                                       message_id=f"{tag}-m1", author_participant_id=world.user_id),), {}),
        ("append_message", (NewMessage(
            branch_id=b, role=MessageRole.ASSISTANT, content="", author_participant_id=bot, model_run_id=run,
            message_id=f"{tag}-m2", tool_calls=[{"call_id": f"{tag}-c1", "name": "read_sheet", "arguments": args}]),),
         {}),
        ("record_tool_call", (NewToolCall(branch_id=b, participant_id=bot, call_id=f"{tag}-c1", name="read_sheet",
                                          arguments=args, model_run_id=run, tool_call_id=f"{tag}-t1", at=NOW),), {}),
        ("insert_artifact", (f"{tag}-t1", ArtifactCapture(
            **_payload(3), arguments_bytes=len(canonical_json(args)), result_tokens=40,
            status=ToolCallStatus.SUCCEEDED, captured_at=NOW + timedelta(seconds=1), tool_version="1",
            runtime_meta={"worker": "w"}, artifact_id=f"{tag}-a1")), {}),
        ("update_tool_call", (f"{tag}-t1",), {"status": ToolCallStatus.SUCCEEDED, "at": NOW + timedelta(seconds=2)}),
        ("derive_memory", (f"{tag}-a1", draft), {"memory_id": f"{tag}-mem1"}),
        ("record_tool_call", (NewToolCall(branch_id=b, participant_id=bot, call_id=f"{tag}-c2", name="read_sheet",
                                          arguments=args, model_run_id=run, tool_call_id=f"{tag}-t2", at=NOW,
                                          visibility=VisibilityScope.CONVERSATION, privacy=PrivacyClass.PUBLIC),), {}),
        ("update_tool_call", (f"{tag}-t2",), {"status": ToolCallStatus.RETRYING, "attempt": 2, "error": "HTTP 503",
                                              "at": NOW + timedelta(seconds=5)}),
        ("update_tool_call", (f"{tag}-t2",), {"status": ToolCallStatus.FAILED, "attempt": 3, "error": "HTTP 503 again",
                                              "retry_critical": True, "at": NOW + timedelta(seconds=8)}),
        ("insert_artifact", (f"{tag}-t2", ArtifactCapture(
            **_payload(0), arguments_bytes=15, error="HTTP 503 again", captured_at=NOW + timedelta(seconds=9),
            artifact_id=f"{tag}-a2")), {}),
        ("insert_tool_memory", (failure,), {}),
        ("append_message", (NewMessage(branch_id=b, role=MessageRole.ASSISTANT, content="Total 30 (one source failed).",
                                       author_participant_id=bot, model_run_id=run, message_id=f"{tag}-m3"),), {}),
        ("finish_model_run", (run,), {"status": "succeeded", "message_id": f"{tag}-m3", "usage": {"tokens": 12},
                                      "finished_at": NOW + timedelta(seconds=12)}),
    ]


async def write_one_by_one(world: World, steps: list[Step]) -> None:
    async with world.sessions() as s, s.begin():
        for name, args, kwargs in steps:
            if name == "derive_memory":  # what a live capture does: memory_record from the stored artifact
                artifact_id, draft = args
                artifact = await graph.get_artifact(s, world.account_id, artifact_id)
                name, args, kwargs = "insert_tool_memory", (memory_record(draft, artifact, **kwargs),), {}
            scope = (world.account_id, world.conversation_id) if name in _CONVERSATION_SCOPED else (world.account_id,)
            await getattr(graph, name)(s, *scope, *args, **kwargs)


async def write_in_bulk(world: World, steps: list[Step]) -> Any:
    batch = GraphBatch(world.account_id, world.conversation_id)
    for name, args, kwargs in steps:
        if name == "derive_memory":
            artifact_id, draft = args
            memory = memory_record(draft, batch.artifact(artifact_id), **kwargs)
            name, args, kwargs = "insert_tool_memory", (memory,), {}
        getattr(batch, name)(*args, **kwargs)
    async with world.sessions() as s, s.begin():
        return await batch.write(s)


async def read_back(world: World, tag: str) -> str:
    """Everything the store returns about the exchange, as JSON with the world's ids replaced."""
    a = world.account_id
    async with world.sessions() as s:
        run = (await graph.get_model_run(s, a, f"{tag}-run")).model_dump(exclude={"started_at"})
        candidates = await graph.load_candidates(s, a, world.conversation_id, world.root_branch_id)
        found: dict[str, Any] = {
            "snapshot_seq": (await graph.get_conversation(s, a, world.conversation_id)).snapshot_seq,
            "run": run,
            "messages": [await graph.get_message(s, a, f"{tag}-m{k}") for k in (1, 2, 3)],
            "calls": [await graph.get_tool_call(s, a, f"{tag}-t{k}") for k in (1, 2)],
            "histories": [await graph.get_tool_call_history(s, a, f"{tag}-t{k}") for k in (1, 2)],
            "artifacts": [await graph.get_artifact(s, a, f"{tag}-a{k}") for k in (1, 2)],
            "arguments": [await graph.get_artifact_arguments(s, a, f"{tag}-a{k}") for k in (1, 2)],
            "payloads": [(await graph.get_inline_payload(s, a, f"{tag}-a{k}") or b"").decode() for k in (1, 2)],
            "memories": [await graph.get_tool_memory(s, a, f"{tag}-mem{k}") for k in (1, 2)],
            "candidates": candidates,
        }
    text = json.dumps(found, default=lambda o: o.model_dump(mode="json") if hasattr(o, "model_dump") else str(o),
                      sort_keys=True)
    for name, value in (("ACCOUNT", a), ("CONVERSATION", world.conversation_id), ("BRANCH", world.root_branch_id),
                        ("USER", world.user_id), ("ASSISTANT", world.assistant_id), ("TAG", tag)):
        text = text.replace(value, name)
    return text


async def test_bulk_rows_read_back_like_rows_written_one_by_one(sessions: async_sessionmaker[AsyncSession]) -> None:
    live, bulk = await new_world(sessions, "live"), await new_world(sessions, "bulk")
    for world, tag in ((live, "live"), (bulk, "bulk")):  # the batch's seq block then starts past 1
        await world.say(world.root_branch_id, "earlier", message_id=f"{tag}-m0")
    await write_one_by_one(live, exchange(live, "live"))
    written = await write_in_bulk(bulk, exchange(bulk, "bulk"))

    assert await read_back(bulk, "bulk") == await read_back(live, "live")
    assert (written.first_seq, written.last_seq) == (2, 13)
    assert written.rows == {"model_runs": 1, "messages": 3, "tool_calls": 2, "tool_artifacts": 2, "tool_memories": 2}
    async with sessions() as s:
        mem1 = await graph.get_tool_memory(s, bulk.account_id, "bulk-mem1")
        history = await graph.get_tool_call_history(s, bulk.account_id, "bulk-t2")
    assert mem1.superseded_by == "bulk-mem2" and written.seqs["bulk-mem2"] == 12
    assert [entry["seq"] for entry in history] == [8, 9, 10]


async def test_a_batch_takes_one_seq_block_in_commit_order(world: World) -> None:
    before = await world.say(world.root_branch_id, "before")
    batch = GraphBatch(world.account_id, world.conversation_id)
    first = batch.append_message(NewMessage(branch_id=world.root_branch_id, role=MessageRole.USER, content="one"))
    second = batch.append_message(NewMessage(branch_id=world.root_branch_id, role=MessageRole.USER, content="two"))
    async with world.sessions() as s, s.begin():
        written = await batch.write(s)
    after = await world.say(world.root_branch_id, "after")
    async with world.sessions() as s:
        seqs = [(await graph.get_message(s, world.account_id, m)).seq for m in (before, first, second, after)]
        conversation = await graph.get_conversation(s, world.account_id, world.conversation_id)
    assert seqs == [1, 2, 3, 4]
    assert (written.first_seq, written.last_seq, conversation.snapshot_seq) == (2, 3, 4)


async def test_memories_link_to_stored_memories_through_the_single_row_rules(world: World) -> None:
    async with world.sessions() as s, s.begin():
        await graph.insert_tool_memory(s, world.account_id, world.conversation_id, memory(world, "stored-old"))
        await graph.insert_tool_memory(s, world.account_id, world.conversation_id, memory(world, "stored-other"))
    batch = GraphBatch(world.account_id, world.conversation_id)
    batch.insert_tool_memory(memory(world, "bulk-new", supersedes=("stored-old",), conflicts_with=("stored-other",)))
    async with world.sessions() as s, s.begin():
        await batch.write(s)
    async with world.sessions() as s:
        old = await graph.get_tool_memory(s, world.account_id, "stored-old")
        other = await graph.get_tool_memory(s, world.account_id, "stored-other")
        new = await graph.get_tool_memory(s, world.account_id, "bulk-new")
    assert (old.superseded_by, new.supersedes) == ("bulk-new", ("stored-old",))
    assert (other.conflicts_with, new.conflicts_with) == (("bulk-new",), ("stored-other",))


async def _write_fails(world: World, batch: GraphBatch, error: type[Exception]) -> Exception:
    async with world.sessions() as s:
        async with s.begin():
            with pytest.raises(error) as caught:
                await batch.write(s)
            await s.rollback()
    async with world.sessions() as s:
        conversation = await graph.get_conversation(s, world.account_id, world.conversation_id)
    assert conversation.snapshot_seq == 0  # nothing was written, no seq was spent
    return caught.value


async def test_another_account_cannot_write_into_a_conversation(
    world: World, sessions: async_sessionmaker[AsyncSession]
) -> None:
    other = await new_world(sessions)
    batch = GraphBatch(other.account_id, world.conversation_id)
    batch.append_message(NewMessage(branch_id=world.root_branch_id, role=MessageRole.USER, content="intruder"))
    error = await _write_fails(world, batch, NotFoundError)
    assert (error.kind, error.id) == ("conversation", world.conversation_id)  # type: ignore[attr-defined]


Queue = Callable[[GraphBatch, World], object]


@pytest.mark.parametrize(
    ("queue", "kind", "missing"),
    [
        (lambda b, w: b.append_message(NewMessage(
            branch_id="no-such-branch", role=MessageRole.USER, content="x")), "branch",
         "no-such-branch"),
        (lambda b, w: b.append_message(NewMessage(
            branch_id=w.root_branch_id, role=MessageRole.USER, content="x",
            author_participant_id="no-such-author")), "participant", "no-such-author"),
        (lambda b, w: b.record_tool_call(NewToolCall(
            branch_id=w.root_branch_id, participant_id=w.assistant_id, call_id="c-x", name="t", arguments={},
            model_run_id="no-such-run")), "model_run", "no-such-run"),
    ],
    ids=["branch", "author", "model_run"],
)
async def test_a_missing_parent_is_not_found(world: World, queue: Queue, kind: str, missing: str) -> None:
    batch = GraphBatch(world.account_id, world.conversation_id)
    queue(batch, world)
    error = await _write_fails(world, batch, NotFoundError)
    assert (error.kind, error.id) == (kind, missing)  # type: ignore[attr-defined]


async def test_a_branch_of_another_account_is_not_found(
    world: World, sessions: async_sessionmaker[AsyncSession]
) -> None:
    other = await new_world(sessions)
    batch = GraphBatch(world.account_id, world.conversation_id)
    batch.append_message(NewMessage(branch_id=other.root_branch_id, role=MessageRole.USER, content="x"))
    error = await _write_fails(world, batch, NotFoundError)
    assert (error.kind, error.id) == ("branch", other.root_branch_id)  # type: ignore[attr-defined]


async def test_a_batch_rolled_back_can_be_written_again_and_a_committed_one_cannot(world: World) -> None:
    batch = GraphBatch(world.account_id, world.conversation_id)
    message = batch.append_message(NewMessage(branch_id=world.root_branch_id, role=MessageRole.USER, content="retried"))
    async with world.sessions() as s, s.begin():
        await batch.write(s)
        await s.rollback()  # as a transient failure would
    async with world.sessions() as s, s.begin():
        written = await batch.write(s)
    assert (written.first_seq, written.seqs) == (1, {message: 1})
    async with world.sessions() as s, s.begin():
        with pytest.raises(IntegrityViolation):
            await batch.write(s)
        await s.rollback()


async def test_a_stored_id_is_an_integrity_violation(world: World) -> None:
    taken = await world.say(world.root_branch_id, "first")
    batch = GraphBatch(world.account_id, world.conversation_id)
    batch.append_message(NewMessage(
        branch_id=world.root_branch_id, role=MessageRole.USER, content="again", message_id=taken))
    async with world.sessions() as s, s.begin():
        with pytest.raises(IntegrityViolation):
            await batch.write(s)
        await s.rollback()


async def test_queued_writes_check_what_the_single_row_writes_check(world: World) -> None:
    batch = GraphBatch(world.account_id, world.conversation_id)
    with pytest.raises(NotFoundError):
        batch.update_tool_call("not-queued", status=ToolCallStatus.SUCCEEDED)
    call = batch.record_tool_call(NewToolCall(
        branch_id=world.root_branch_id, participant_id=world.assistant_id, call_id="c-q", name="t", arguments={}))
    with pytest.raises(IntegrityViolation):
        batch.update_tool_call(call, status=ToolCallStatus.RETRYING, attempt=0)
    with pytest.raises(NotFoundError):
        batch.insert_artifact("not-queued", ArtifactCapture(**_payload(1), arguments_bytes=2))
    with pytest.raises(IntegrityViolation):
        batch.finish_model_run(batch.start_model_run(world.root_branch_id, world.assistant_id), status="running")


async def test_delete_account_removes_every_row_of_the_account_only(
    world: World, sessions: async_sessionmaker[AsyncSession]
) -> None:
    kept = await new_world(sessions)
    for target in (world, kept):
        await write_in_bulk(target, exchange(target, f"del-{target.account_id[:8]}"))
    fork_at = await world.say(world.root_branch_id, "fork here")
    async with sessions() as s, s.begin():
        await graph.fork_branch(s, world.account_id, world.conversation_id, world.root_branch_id, fork_at)
        await graph.put_user_memory(s, world.account_id, "Prefers EUR.")
    async with sessions() as s, s.begin():
        await delete_account(s, world.account_id)
    async with sessions() as s:
        with pytest.raises(NotFoundError):
            await graph.get_account(s, world.account_id)
        assert await graph.list_conversations(s, world.account_id) == []
        assert await graph.list_user_memories(s, world.account_id) == []
        assert (await graph.get_conversation(s, kept.account_id, kept.conversation_id)).snapshot_seq == 12


async def test_a_large_batch_is_analysed_so_the_next_tables_check_their_references_by_key(world: World) -> None:
    """Foreign-key checks are planned from statistics. Without ANALYZE after a large COPY, a table last
    analysed small makes Postgres check each new reference by scanning the account's rows (quadratic: the
    growth benchmark's 100k-artifact load ran for hours); after it, by the referenced table's key."""
    # Many small batches in one transaction (the growth benchmark writes one per branch) count together.
    batches = [GraphBatch(world.account_id, world.conversation_id) for _ in range(4)]
    for k in range(ANALYZE_AFTER_ROWS):
        batches[k % 4].start_model_run(world.root_branch_id, world.assistant_id)
    async with world.sessions() as s, s.begin():
        await s.execute(text("ANALYZE model_runs"))  # statistics as of before the batch, whatever earlier tests wrote
        before = (await s.execute(text("SELECT reltuples FROM pg_class WHERE relname = 'model_runs'"))).scalar_one()
        for batch in batches:
            await batch.write(s)
        after = (await s.execute(text("SELECT reltuples FROM pg_class WHERE relname = 'model_runs'"))).scalar_one()
        # The check Postgres runs for a reference to model_runs, as a generic (cached) plan.
        await s.execute(text("SET LOCAL plan_cache_mode = force_generic_plan"))
        await s.execute(text("PREPARE ri_check(text, text, text) AS SELECT 1 FROM ONLY model_runs x "
                             "WHERE account_id = $1 AND conversation_id = $2 AND id = $3 FOR KEY SHARE OF x"))
        plan = "\n".join((await s.execute(text("EXPLAIN EXECUTE ri_check('a', 'c', 'r')"))).scalars())
        await s.execute(text("DEALLOCATE ri_check"))
    assert after >= before + ANALYZE_AFTER_ROWS  # the rows of this uncommitted batch are counted
    # By a key: an index scan, never a scan of the table. Which index depends on what else the session's
    # database holds (with many small conversations, (account, conversation) looks as selective as the key).
    assert "Seq Scan" not in plan and "Index" in plan, plan
