"""Every object a tool puts in the bucket is known to the graph, and swept when its call never settled.

The harden faults part once found one ``files.write`` object under the
account's content-addressed prefix that no row referenced. The path: the put
succeeded, the attempt then failed (here: S3 stored the bytes but the response
was lost, as during an S3 outage; in the harden run a Postgres restart under the
capture or a worker kill does the same), the call ran out of attempts and was
captured as failed, and the model answered without the file. Nothing in the
graph named those bytes.

These tests drive the real activity (``execute_tool``, then
``finalize_tool_failure`` as the workflow does after the last attempt) against
real Postgres and S3, then collect with the real retention workflow.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from minio import Minio
from sqlalchemy import select, text
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment, WorkflowEnvironment

from activities.providers.factory import ModelProviders
from activities.deps import GraphDeps
from activities.ingest import begin_tool_call
from activities.tools.base import ToolContext, ToolError
from activities.tools.registry import default_registry
from activities.turns import TurnActivities
from contracts import ToolCallInput
from dossier.retention import run_retention
from dossier.runtime import SAMPLE_WORKSPACE, build_worker
from policy.enums import PrivacyClass, RuntimeKind
from store import conversations
from store.artifacts import ArtifactStore, ObjectRef, object_key
from store.errors import ArtifactStoreUnavailableError
from store.models import ObjectState, StoredObject, ToolCall
from store.writes import NewToolCall

pytestmark = pytest.mark.integration

REPORT = "# Q3 revenue by region\n\n| region | revenue_eur |\n|---|---:|\n| Benelux | 133510.04 |\n"


class LosesTheResponse(ArtifactStore):
    """S3 that stores the bytes and then drops the connection before answering (an outage mid-request)."""

    async def put(self, account_id: str, data: bytes, *, content_type: str = "application/octet-stream",
                  privacy: PrivacyClass = PrivacyClass.USER) -> ObjectRef:
        await super().put(account_id, data, content_type=content_type, privacy=privacy)
        raise ArtifactStoreUnavailableError("S3 endpoint unavailable: connection reset after the upload")


def _losing(store: ArtifactStore) -> ArtifactStore:
    flaky = LosesTheResponse.__new__(LosesTheResponse)
    flaky.__dict__.update(store.__dict__)  # the same client and bucket: only put behaves differently
    return flaky


@pytest.fixture
async def worker(temporal_env: WorkflowEnvironment, graph_deps: GraphDeps) -> AsyncIterator[str]:
    task_queue = f"objects-{uuid.uuid4().hex[:8]}"
    async with build_worker(temporal_env.client, graph_deps, task_queue=task_queue,
                            workflow_failure_exception_types=[Exception], providers=ModelProviders()):
        yield task_queue


async def _write_call(deps: GraphDeps, content: str = REPORT) -> tuple[str, str]:
    """A fresh account and one recorded ``files.write`` call: ``(account_id, tool_call_id)``."""
    async with deps.sessions() as session, session.begin():
        account_id = await conversations.create_account(session, name="stored objects test")
        conversation = await conversations.create_conversation(session, account_id, title="t")
        assistant = await conversations.add_participant(session, account_id, conversation.id, name="Assistant",
                                                        provider="scripted", model="analyst")
    call = await begin_tool_call(deps, account_id, conversation.id, NewToolCall(
        branch_id=conversation.root_branch_id, participant_id=assistant.id, call_id=f"call_{uuid.uuid4().hex}",
        name="files.write", arguments={"name": "q3-report.md", "content": content}, runtime_kind=RuntimeKind.CHAT,
        at=datetime.now(UTC)))
    return account_id, call.id


def _bucket(s3: Minio, bucket: str, account_id: str) -> set[str]:
    return {o.object_name for o in s3.list_objects(bucket, prefix=f"accounts/{account_id}/", recursive=True)}


async def _referenced_by_succeeded_records(deps: GraphDeps, account_id: str) -> set[str]:
    """What the graph's settled results reference: artifact payload keys and succeeded file handles."""
    async with deps.sessions() as session:
        rows = (await session.execute(text(
            "SELECT storage_key, tool_name, status, content_type, inline_payload FROM tool_artifacts "
            "WHERE account_id = :a"), {"a": account_id})).all()
    keys = {row.storage_key for row in rows if row.storage_key}
    for row in rows:
        if row.tool_name == "files.write" and row.status == "succeeded":
            payload = bytes(row.inline_payload) if row.inline_payload is not None else await deps.artifacts.get(
                account_id, row.storage_key, (await deps.artifacts.stat(account_id, row.storage_key)).sha256)
            keys.add(json.loads(payload)["uri"].removeprefix(f"s3://{deps.artifacts.bucket}/"))
    return keys


async def _fail_for_good(deps: GraphDeps, account_id: str, tool_call_id: str) -> None:
    """The last attempt puts the bytes and loses the answer; then its error is captured, as the workflow does."""
    request = ToolCallInput(account_id=account_id, tool_call_id=tool_call_id)
    losing = TurnActivities(deps=replace(deps, artifacts=_losing(deps.artifacts)), tools=default_registry(),
                            workspace=SAMPLE_WORKSPACE, providers=ModelProviders())
    with pytest.raises(ApplicationError, match="could not store q3-report.md"):
        await ActivityEnvironment().run(losing.execute_tool, request)
    activities = TurnActivities(deps=deps, tools=default_registry(), workspace=SAMPLE_WORKSPACE,
                                providers=ModelProviders())
    failed = await ActivityEnvironment().run(activities.finalize_tool_failure, request)
    assert failed.status == "failed"


async def test_bytes_of_a_write_whose_call_failed_do_not_outlive_the_retention_sweep(
    graph_deps: GraphDeps, temporal_env: WorkflowEnvironment, worker: str, s3: Minio, s3_bucket: str,
) -> None:
    account_id, tool_call_id = await _write_call(graph_deps)
    await _fail_for_good(graph_deps, account_id, tool_call_id)
    await run_retention(temporal_env.client, worker, now=datetime.now(UTC) + timedelta(days=2))
    # Every byte left in the account's prefix is referenced by a settled record of the graph.
    left = _bucket(s3, s3_bucket, account_id)
    assert left - await _referenced_by_succeeded_records(graph_deps, account_id) == set()


async def _rows(deps: GraphDeps, account_id: str, key: str) -> list[tuple[str, str]]:
    """``(tool_call_id, state)`` of the account's stored-object rows naming ``key``.

    The session's graph deps keep no payload inline, so captured results have rows (claimed) of their own.
    """
    async with deps.sessions() as session:
        rows = (await session.execute(select(StoredObject.tool_call_id, StoredObject.state).where(
            StoredObject.account_id == account_id, StoredObject.key == key))).all()
    return sorted(tuple(row) for row in rows)


def _file_key(account_id: str, content: str = REPORT) -> str:
    return object_key(account_id, hashlib.sha256(content.encode()).hexdigest())


async def _succeed(deps: GraphDeps, account_id: str, tool_call_id: str) -> dict:
    activities = TurnActivities(deps=deps, tools=default_registry(), workspace=SAMPLE_WORKSPACE,
                                providers=ModelProviders())
    step = await ActivityEnvironment().run(activities.execute_tool,
                                           ToolCallInput(account_id=account_id, tool_call_id=tool_call_id))
    assert step.status == "succeeded"
    async with deps.sessions() as session:
        payload = await session.scalar(text("SELECT storage_key FROM tool_artifacts WHERE id = :id"),
                                       {"id": step.artifact_id})
    return json.loads(await deps.artifacts.get(account_id, payload, payload.rsplit("/", 1)[-1]))


async def test_a_write_is_known_to_the_graph_from_before_its_put_until_the_sweep(
    graph_deps: GraphDeps, temporal_env: WorkflowEnvironment, worker: str, s3: Minio, s3_bucket: str,
) -> None:
    account_id, tool_call_id = await _write_call(graph_deps)
    await _fail_for_good(graph_deps, account_id, tool_call_id)
    key = _file_key(account_id)
    written = {key}
    # The failed call's file is in the bucket, and the graph names it: a pending row of its call.
    assert await _rows(graph_deps, account_id, key) == [(tool_call_id, ObjectState.PENDING.value)]
    assert _bucket(s3, s3_bucket, account_id) - await _referenced_by_succeeded_records(graph_deps, account_id) \
        == written
    # Within the grace period the sweep leaves it (a retry may still claim it) ...
    early = await run_retention(temporal_env.client, worker, now=datetime.now(UTC) + timedelta(hours=1))
    assert early.actions.get("object:swept_object", 0) == 0 and written <= _bucket(s3, s3_bucket, account_id)
    # ... after it, row and bytes go.
    late = await run_retention(temporal_env.client, worker, now=datetime.now(UTC) + timedelta(days=2))
    assert late.actions.get("object:swept_object", 0) >= 1
    assert await _rows(graph_deps, account_id, key) == [] and not written & _bucket(s3, s3_bucket, account_id)


async def test_a_retried_write_claims_its_one_record_and_the_sweep_keeps_it(
    graph_deps: GraphDeps, temporal_env: WorkflowEnvironment, worker: str, s3: Minio, s3_bucket: str,
) -> None:
    account_id, tool_call_id = await _write_call(graph_deps)
    request = ToolCallInput(account_id=account_id, tool_call_id=tool_call_id)
    losing = TurnActivities(deps=replace(graph_deps, artifacts=_losing(graph_deps.artifacts)),
                            tools=default_registry(), workspace=SAMPLE_WORKSPACE, providers=ModelProviders())
    with pytest.raises(ApplicationError):
        await ActivityEnvironment().run(losing.execute_tool, request)
    handle = await _succeed(graph_deps, account_id, tool_call_id)  # the next attempt: same bytes, same key
    key = handle["uri"].removeprefix(f"s3://{s3_bucket}/")
    assert await _rows(graph_deps, account_id, key) == [(tool_call_id, ObjectState.CLAIMED.value)]
    await run_retention(temporal_env.client, worker, now=datetime.now(UTC) + timedelta(days=30))
    assert await _rows(graph_deps, account_id, key) == [(tool_call_id, ObjectState.CLAIMED.value)]
    assert await graph_deps.artifacts.get(account_id, key, handle["sha256"]) == REPORT.encode()


async def test_the_sweep_keeps_bytes_another_call_claimed(
    graph_deps: GraphDeps, temporal_env: WorkflowEnvironment, worker: str, s3: Minio, s3_bucket: str,
) -> None:
    account_id, failed_call = await _write_call(graph_deps)
    async with graph_deps.sessions() as session:
        call = await session.scalar(select(ToolCall).where(ToolCall.id == failed_call))
        conversation_id, branch_id, participant_id = call.conversation_id, call.branch_id, call.participant_id
    same = await begin_tool_call(graph_deps, account_id, conversation_id, NewToolCall(
        branch_id=branch_id, participant_id=participant_id, call_id=f"call_{uuid.uuid4().hex}", name="files.write",
        arguments={"name": "copy.md", "content": REPORT}, runtime_kind=RuntimeKind.CHAT))
    await _fail_for_good(graph_deps, account_id, failed_call)
    handle = await _succeed(graph_deps, account_id, same.id)  # the same bytes: one content-addressed object
    key = handle["uri"].removeprefix(f"s3://{s3_bucket}/")
    assert await _rows(graph_deps, account_id, key) == sorted([
        (failed_call, ObjectState.PENDING.value), (same.id, ObjectState.CLAIMED.value)])
    result = await run_retention(temporal_env.client, worker, now=datetime.now(UTC) + timedelta(days=2))
    assert result.actions.get("object:swept_row", 0) >= 1
    assert await _rows(graph_deps, account_id, key) == [(same.id, ObjectState.CLAIMED.value)]
    assert await graph_deps.artifacts.get(account_id, key, handle["sha256"]) == REPORT.encode()


async def test_without_a_graph_to_record_in_files_write_stores_nothing(
    graph_deps: GraphDeps, s3: Minio, s3_bucket: str,
) -> None:
    context = ToolContext(account_id=str(uuid.uuid4()), tool_call_id="tc-none", attempt=1,
                          workspace=SAMPLE_WORKSPACE, artifacts=graph_deps.artifacts)
    with pytest.raises(ToolError, match="needs the runtime graph"):
        await default_registry().execute("files.write", context, {"name": "r.md", "content": REPORT})
    assert _bucket(s3, s3_bucket, context.account_id) == set()
