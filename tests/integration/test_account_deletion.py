"""Account deletion as a durable workflow, with the worker killed mid-way.

Two accounts each run a real agent turn (scripted model, real tools: tool calls,
S3 artifacts, memories, a generated report, assemblies and decisions) and get
a user memory. Account A is then deleted in batches of two rows by a worker
running as a separate process. The test holds a row lock on one of A's tool
calls, so the deletion blocks on a known step with earlier steps done; it kills
that worker with SIGKILL there, releases the lock, starts a second worker, and
the same workflow finishes. Then every table of the schema and every object of
the bucket are scanned: nothing of A is left, a tombstone holds only the
sha256 of its id, and B's rows and objects are byte for byte what they were.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from minio import Minio
from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowExecutionStatus
from temporalio.testing import ActivityEnvironment, WorkflowEnvironment

from activities.deps import GraphDeps
from activities.errors import is_retryable
from activities.retention import RetentionActivities
from dossier.client import AnswerRefusedError, DossierClient
from contracts import AccountDeletionStepInput, RetentionBatchInput, WorkflowName
from dossier.retention import RetentionError, retention_schedule_id, start_account_deletion
from dossier.services.models import Endpoints
from dossier.services.worker import worker_environment
from dossier.settings import Settings
from store import conversations, user_memories
from store.account_deletion import account_sha256, account_tables
from store.errors import AccountDeletedError
from store.models import AccountDeletion, Base, PolicyDecision, ToolArtifact, ToolCall, UserMemory
from store.payloads import capture_artifact

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PROMPT = "Which region drove Q3 2026 revenue? Write me a short report."
PICK = "I want to review one of the sales files; let me pick it."
"""Makes ``scripted:picker`` open a deferred ``user.pick_file`` call: a turn that waits, running."""


async def _rows_of(engine: AsyncEngine, account_id: str) -> dict[str, list[tuple]]:
    """Every row of the account in every table, in a stable order (what 'untouched' is compared on)."""
    found: dict[str, list[tuple]] = {}
    async with engine.connect() as connection:
        for table in Base.metadata.sorted_tables:
            column = table.c.get("account_id") if "account_id" in table.c else (
                table.c.id if table.name == "accounts" else None)
            if column is None:
                continue
            rows = (await connection.execute(select(table).where(column == account_id))).all()
            found[table.name] = sorted(tuple(repr(value) for value in row) for row in rows)
    return found


async def _counts(engine: AsyncEngine, account_id: str) -> dict[str, int]:
    return {name: len(rows) for name, rows in (await _rows_of(engine, account_id)).items()}


def _objects(s3: Minio, bucket: str, account_id: str | None = None) -> dict[str, str]:
    """Key -> sha256 of the bytes, for every object in the bucket (or under one account's prefix)."""
    prefix = f"accounts/{account_id}/" if account_id else ""
    found = {}
    for entry in s3.list_objects(bucket, prefix=prefix, recursive=True):
        response = s3.get_object(bucket, entry.object_name)
        try:
            found[entry.object_name] = hashlib.sha256(response.read()).hexdigest()
        finally:
            response.close()
            response.release_conn()
    return found


async def _a_lock_waiter(engine: AsyncEngine) -> bool:
    """Whether a statement of this database comes to wait on a row lock within a minute."""
    for _ in range(600):
        async with engine.connect() as probe:
            if await probe.scalar(text("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                                       "AND datname = current_database()")):
                return True
        await asyncio.sleep(0.1)
    return False


async def _populate(client: DossierClient) -> None:
    outcome = await asyncio.wait_for(client.chat(PROMPT, model="scripted:analyst"), timeout=180)
    assert outcome.result.status == "answered"
    async with client.deps.sessions() as session, session.begin():
        await user_memories.put_user_memory(session, client.account_id, "Prefers reports in Markdown.")


@pytest.mark.slow  # the full tier only: kills a worker process
async def test_deleting_an_account_survives_a_worker_kill_and_leaves_nothing_behind(
    temporal_env: WorkflowEnvironment, graph_deps: GraphDeps, endpoints: Endpoints, s3_bucket: str,
    database_url: str, engine: AsyncEngine, s3: Minio,
) -> None:
    task_queue = f"dossier-delete-{uuid.uuid4().hex[:8]}"
    settings = Settings(temporal_task_queue=task_queue, s3_bucket=s3_bucket)
    target = temporal_env.client.service_client.config.target_host
    env = worker_environment(settings, Endpoints(**{
        **endpoints.__dict__, "database_url": database_url, "s3_bucket": s3_bucket,
        "temporal_address": target, "temporal_namespace": "default"}))

    def spawn_worker() -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-m", "worker"], cwd=ROOT, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

    clients = []
    for name in ("doomed", "kept"):
        async with graph_deps.sessions() as session, session.begin():
            account_id = await conversations.create_account(session, name=name)
        clients.append(DossierClient(deps=graph_deps, temporal=temporal_env.client,
                                     settings=Settings(temporal_task_queue=task_queue), account_id=account_id,
                                     poll_seconds=0.2))
    doomed, kept = clients

    first = spawn_worker()
    second: subprocess.Popen[bytes] | None = None
    lock = await engine.connect()
    try:
        for client in clients:
            await _populate(client)
        # The worker created the retention schedule at start (idempotently: the second worker finds it).
        schedule = temporal_env.client.get_schedule_handle(retention_schedule_id(task_queue))
        assert (await schedule.describe()).schedule.action.workflow == WorkflowName.RETENTION
        before_doomed = await _counts(engine, doomed.account_id)
        assert before_doomed["tool_artifacts"] > 0 and before_doomed["context_assemblies"] > 0
        assert before_doomed["policy_decisions"] > 0 and before_doomed["user_memories"] == 1
        assert before_doomed["stored_objects"] > 0  # the report files.write recorded before its put
        assert _objects(s3, s3_bucket, doomed.account_id)  # payloads and the generated report
        kept_rows = await _rows_of(engine, kept.account_id)
        kept_objects = _objects(s3, s3_bucket, kept.account_id)
        assert kept_objects

        # Hold one of A's tool calls: the deletion blocks on that step, the earlier steps done.
        transaction = await lock.begin()
        await lock.execute(select(ToolCall.id).where(ToolCall.account_id == doomed.account_id).limit(1)
                           .with_for_update())
        handle = await start_account_deletion(temporal_env.client, graph_deps, task_queue, doomed.account_id,
                                              batch_size=2)
        again = await start_account_deletion(temporal_env.client, graph_deps, task_queue, doomed.account_id,
                                             batch_size=2)
        assert again.id == handle.id and again.result_run_id == handle.result_run_id  # one deletion per account
        assert await _a_lock_waiter(engine), "the deletion never reached the locked tool call"
        mid = await _counts(engine, doomed.account_id)
        assert mid["tool_artifacts"] == 0 and mid["policy_decisions"] == 0  # earlier steps done
        assert mid["tool_calls"] > 0 and mid["accounts"] == 1  # later ones not

        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=10)
        await transaction.rollback()
        second = spawn_worker()
        result = await asyncio.wait_for(handle.result(), timeout=180)
    finally:
        await lock.close()
        for process in (first, second):
            if process is not None and process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)

    # Every table of the schema, every object of the bucket: nothing of A.
    assert set(await _counts(engine, doomed.account_id)) == {
        t.name for t in Base.metadata.sorted_tables if "account_id" in t.c or t.name == "accounts"}
    assert await _counts(engine, doomed.account_id) == dict.fromkeys(await _counts(engine, doomed.account_id), 0)
    assert [key for key in _objects(s3, s3_bucket) if doomed.account_id in key] == []
    assert result.rows_deleted == sum(before_doomed.values()) and result.objects_deleted > 0
    async with graph_deps.sessions() as session:
        tombstone = await session.scalar(select(AccountDeletion).where(
            AccountDeletion.account_sha256 == account_sha256(doomed.account_id)))
        artifacts_left = await session.scalar(select(func.count()).select_from(ToolArtifact).where(
            ToolArtifact.account_id == doomed.account_id))
    assert tombstone is not None and tombstone.rows_deleted == result.rows_deleted and artifacts_left == 0
    assert doomed.account_id not in repr([getattr(tombstone, c.key) for c in AccountDeletion.__table__.c])

    # Every step ran with a heartbeat timeout: the killed worker's step was retried once its heartbeats stopped.
    steps = [event.activity_task_scheduled_event_attributes async for event in handle.fetch_history_events()
             if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED]
    assert steps and all(step.heartbeat_timeout.ToTimedelta().total_seconds() > 0 for step in steps
                         if step.activity_type.name != "plan_account_deletion")

    # B, byte for byte.
    assert await _rows_of(engine, kept.account_id) == kept_rows
    assert _objects(s3, s3_bucket, kept.account_id) == kept_objects

    # A deleted account is unknown now: a second deletion is refused, nothing restarts.
    with pytest.raises(RetentionError, match="no account"):
        await start_account_deletion(temporal_env.client, graph_deps, task_queue, doomed.account_id)
    await schedule.delete()


async def test_a_deletion_step_heartbeats_while_it_is_blocked(graph_deps: GraphDeps, engine: AsyncEngine) -> None:
    """A step blocked on a row lock keeps heartbeating (so only a dead worker's step stops), and then finishes."""
    async with graph_deps.sessions() as session, session.begin():
        account_id = await conversations.create_account(session, name="heartbeats")
        await user_memories.put_user_memory(session, account_id, "Blocks the deletion step.")
    beats = asyncio.Queue()
    environment = ActivityEnvironment()
    environment.on_heartbeat = lambda *details: beats.put_nowait(details)
    step = AccountDeletionStepInput(account_id=account_id, step="rows:user_memories", batch_size=10,
                                    rows_deleted=0, objects_deleted=0)
    async with engine.connect() as lock:
        transaction = await lock.begin()
        await lock.execute(select(UserMemory.id).where(UserMemory.account_id == account_id).with_for_update())
        running = asyncio.ensure_future(environment.run(RetentionActivities(graph_deps).delete_account_step, step))
        for _ in range(2):  # one as the batch starts, one while it waits for the lock
            await asyncio.wait_for(beats.get(), timeout=60)
        assert not running.done()
        await transaction.rollback()
    assert await asyncio.wait_for(running, timeout=60) == 1

    # A collection batch heartbeats too (as it starts; then while it runs, by the same helper).
    beats = asyncio.Queue()
    environment.on_heartbeat = lambda *details: beats.put_nowait(details)
    await environment.run(RetentionActivities(graph_deps).collect_retention,
                          RetentionBatchInput(kind="trace", now=datetime.now(UTC), batch_size=1))
    assert not beats.empty()


async def test_a_turn_running_during_the_deletion_is_stopped_and_nothing_is_written_after(
    dossier: DossierClient, engine: AsyncEngine, s3: Minio,
) -> None:
    """The deletion marks the account, terminates its running turns, then deletes: a turn waiting on a deferred
    call when the deletion starts is terminated, its answer is refused, any write for the account fails with a
    typed permanent error (an object is refused before it is put), and nothing is left once it ends."""
    pending = await dossier.chat(PICK, model="scripted:picker", wait=False)
    (tool_call_id,) = await dossier.wait_until_waiting(pending.workflow_id)
    turn = dossier.temporal.get_workflow_handle(pending.workflow_id)
    bucket = dossier.deps.artifacts.bucket
    async with engine.connect() as lock:
        # Pause the deletion on the policy decisions' step (one of the first): the mark and the stop are done,
        # the tool calls are still there.
        transaction = await lock.begin()
        await lock.execute(select(PolicyDecision.ordinal).where(PolicyDecision.account_id == dossier.account_id)
                           .limit(1).with_for_update())
        handle = await start_account_deletion(dossier.temporal, dossier.deps, dossier.settings.temporal_task_queue,
                                              dossier.account_id, batch_size=2)
        assert await _a_lock_waiter(engine), "the deletion never reached the locked policy decision"

        assert (await turn.describe()).status == WorkflowExecutionStatus.TERMINATED
        with pytest.raises(AnswerRefusedError):
            await dossier.answer(tool_call_id, json.dumps({"path": "sales/2026-q3-orders.csv"}))
        objects = _objects(s3, bucket, dossier.account_id)
        with pytest.raises(AccountDeletedError):  # refused before the object is put
            async with dossier.deps.sessions() as session, session.begin():
                await capture_artifact(session, dossier.deps.artifacts, dossier.account_id, tool_call_id,
                                       b'{"path": "late.csv"}' * 100, content_type="application/json", inline_max=0)
        assert _objects(s3, bucket, dossier.account_id) == objects
        with pytest.raises(AccountDeletedError):  # every table refuses a row for it (the triggers)
            async with dossier.deps.sessions() as session, session.begin():
                await user_memories.put_user_memory(session, dossier.account_id, "written during the deletion")
        assert not is_retryable(AccountDeletedError("an activity fails for good, not retried"))
        await transaction.rollback()
    await asyncio.wait_for(handle.result(), timeout=180)

    assert set((await _counts(engine, dossier.account_id)).values()) == {0}
    assert _objects(s3, bucket, dossier.account_id) == {}
    with pytest.raises(RetentionError, match="no account"):
        await start_account_deletion(dossier.temporal, dossier.deps, dossier.settings.temporal_task_queue,
                                     dossier.account_id)


async def test_every_account_table_refuses_rows_once_the_account_is_being_deleted(engine: AsyncEngine) -> None:
    """A table added later without the fence trigger fails here (migration 0011 gave the tables of its time)."""
    async with engine.connect() as connection:
        fenced = set((await connection.scalars(text(
            "SELECT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
            "WHERE t.tgname = c.relname || '_refuse_deleted_account' AND c.relnamespace = "
            "(SELECT oid FROM pg_namespace WHERE nspname = current_schema())"))).all())
    assert fenced == {table.name for table in account_tables()}
