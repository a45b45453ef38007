"""Tool calls, attempt history and artifact capture."""

from __future__ import annotations

import hashlib

import pytest
from sqlalchemy import func, select

from policy.enums import PrivacyClass, ToolCallStatus, VisibilityScope
from store import graph
from store.artifacts import ArtifactStore
from store.errors import ArtifactIntegrityError, IntegrityViolation, NotFoundError, PayloadTooLargeError
from store.models import ToolArtifact, ToolCall
from store.writes import NewToolCall
from storeworld import World

pytestmark = pytest.mark.integration


async def _call(world: World, call_id: str = "call-1", **kwargs: object):  # noqa: ANN202
    async with world.sessions() as s, s.begin():
        return await graph.record_tool_call(
            s, world.account_id, world.conversation_id, NewToolCall(
                branch_id=world.root_branch_id, participant_id=world.assistant_id,
                call_id=f"{world.account_id}:{call_id}", name="read_sheet", arguments={"sheet": "Q3"},
                **kwargs),  # type: ignore[arg-type]
        )


async def test_record_tool_call_is_idempotent_on_call_id(world: World) -> None:
    first = await _call(world, privacy=PrivacyClass.OAUTH)
    second = await _call(world, privacy=PrivacyClass.PUBLIC)  # a retried activity
    async with world.sessions() as s:
        rows = await s.scalar(select(func.count()).select_from(ToolCall).where(ToolCall.account_id == world.account_id))
        by_call_id = await graph.get_tool_call_by_call_id(s, world.account_id, first.call_id)
        next_seq = (await graph.get_conversation(s, world.account_id, world.conversation_id)).snapshot_seq
    assert second == first == by_call_id
    assert rows == 1
    assert next_seq == first.seq  # the retry spent no seq
    assert first.privacy is PrivacyClass.OAUTH and first.status is ToolCallStatus.PENDING


async def test_update_tool_call_appends_to_history(world: World) -> None:
    call = await _call(world)
    async with world.sessions() as s, s.begin():
        failed = await graph.update_tool_call(
            s, world.account_id, call.id, status=ToolCallStatus.FAILED, attempt=1, error="HTTP 503"
        )
        retrying = await graph.update_tool_call(s, world.account_id, call.id, status=ToolCallStatus.RETRYING, attempt=2)
        deferred = await graph.update_tool_call(
            s, world.account_id, call.id, status=ToolCallStatus.DEFERRED, attempt=2, waiting_for="user to pick a file"
        )
        history = await graph.get_tool_call_history(s, world.account_id, call.id)
        with pytest.raises(IntegrityViolation):
            await graph.update_tool_call(s, world.account_id, call.id, status=ToolCallStatus.FAILED, attempt=0)
    assert (failed.status, failed.last_error, failed.attempts) == (ToolCallStatus.FAILED, "HTTP 503", 1)
    assert (retrying.status, retrying.attempts, retrying.last_error) == (ToolCallStatus.RETRYING, 2, "HTTP 503")
    assert (deferred.waiting_for, deferred.status) == ("user to pick a file", ToolCallStatus.DEFERRED)
    assert [(h["attempt"], h["status"], h["error"]) for h in history] == [
        (1, "pending", None),
        (1, "failed", "HTTP 503"),
        (2, "retrying", None),
        (2, "deferred", None),
    ]
    assert [h["seq"] for h in history] == sorted(h["seq"] for h in history)
    assert all(h["at"] for h in history)


async def test_insert_artifact_is_idempotent_on_the_tool_call(world: World) -> None:
    call = await _call(world, visibility=VisibilityScope.CONVERSATION, privacy=PrivacyClass.GOOGLE_DERIVED)
    payload = b"name,total\nacme,12\n"
    digest = hashlib.sha256(payload).hexdigest()
    capture = dict(
        content_type="text/csv", sha256=digest, result_bytes=len(payload), arguments_bytes=14,
        storage="inline", inline_payload=payload, status=ToolCallStatus.SUCCEEDED, result_tokens=9,
    )
    async with world.sessions() as s, s.begin():
        first = await graph.insert_artifact(s, world.account_id, call.id, graph.ArtifactCapture(**capture))
    async with world.sessions() as s, s.begin():
        second = await graph.insert_artifact(
            s, world.account_id, call.id, graph.ArtifactCapture(**{**capture, "content_type": "text/plain"})
        )
        rows = await s.scalar(
            select(func.count()).select_from(ToolArtifact).where(ToolArtifact.tool_call_id == call.id)
        )
        payload_back = await graph.read_artifact_payload(s, None, world.account_id, first.id)
        arguments = await graph.get_artifact_arguments(s, world.account_id, first.id)
    assert second == first and rows == 1
    assert first.content_type == "text/csv"
    assert (first.call_id, first.tool_name) == (call.call_id, "read_sheet")
    assert first.owner_participant_id == world.assistant_id
    assert (first.visibility, first.privacy, first.storage) == (
        VisibilityScope.CONVERSATION, PrivacyClass.GOOGLE_DERIVED, "inline",
    )
    assert first.seq > call.seq
    assert payload_back == payload and arguments == {"sheet": "Q3"}


async def test_an_artifact_capture_checks_its_payload(world: World) -> None:
    with pytest.raises(IntegrityViolation):
        graph.ArtifactCapture(content_type="text/plain", sha256="0" * 64, result_bytes=3, arguments_bytes=0,
                              storage="inline", inline_payload=b"abc")
    with pytest.raises(IntegrityViolation):
        graph.ArtifactCapture(content_type="text/plain", sha256="0" * 64, result_bytes=3, arguments_bytes=0,
                              storage="object")
    big = b"x" * (graph.INLINE_PAYLOAD_MAX + 1)
    with pytest.raises(PayloadTooLargeError):
        graph.ArtifactCapture(content_type="text/plain", sha256=hashlib.sha256(big).hexdigest(),
                              result_bytes=len(big), arguments_bytes=0, storage="inline", inline_payload=big)
    async with world.sessions() as s:
        with pytest.raises(NotFoundError):
            await graph.insert_artifact(s, world.account_id, "no-such-call", graph.ArtifactCapture(
                content_type="text/plain", sha256="0" * 64, result_bytes=0, arguments_bytes=0, storage="object",
                storage_key="k"))


async def test_capture_goes_inline_or_to_s3_and_reads_back_verified(
    world: World, artifact_store: ArtifactStore
) -> None:
    small_call = await _call(world, call_id="small")
    big_call = await _call(world, call_id="big")
    big = b"row\n" * 40_000
    async with world.sessions() as s, s.begin():
        small = await graph.capture_artifact(
            s, artifact_store, world.account_id, small_call.id, b"ok", content_type="text/plain",
            status=ToolCallStatus.SUCCEEDED,
        )
        large = await graph.capture_artifact(
            s, artifact_store, world.account_id, big_call.id, big, content_type="text/csv",
            status=ToolCallStatus.SUCCEEDED,
        )
        again = await graph.capture_artifact(
            s, artifact_store, world.account_id, big_call.id, b"different", content_type="text/csv"
        )
    async with world.sessions() as s:
        assert await graph.read_artifact_payload(s, artifact_store, world.account_id, small.id) == b"ok"
        assert await graph.read_artifact_payload(s, artifact_store, world.account_id, large.id) == big
    # Tamper with the inline copy: the read refuses it.
    async with world.sessions() as s, s.begin():
        await s.execute(
            ToolArtifact.__table__.update()
            .where(ToolArtifact.id == small.id)
            .values(inline_payload=b"no")
        )
        with pytest.raises(ArtifactIntegrityError):
            await graph.read_artifact_payload(s, artifact_store, world.account_id, small.id)
        await s.rollback()
    assert small.storage == "inline" and small.storage_key is None
    assert large.storage == "object" and large.storage_key == f"accounts/{world.account_id}/sha256/{large.sha256}"
    assert large.result_bytes == len(big) and again == large
