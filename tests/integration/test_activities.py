"""The I/O steps on real Postgres and S3: capture, derivation, provenance, assembly.

Above all, bad input: a tampered object, a malformed payload, a 50 MB
payload, unknown ids and a cyclic branch each get a clear, typed error or an
out-of-line artifact, and nothing that was captured is lost.
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import pytest
from minio import Minio
from sqlalchemy import select, text

from activities.capture import (
    CALL_ERROR_MAX_CHARS,
    ToolOutcome,
    begin_tool_call,
    capture_tool_result,
    record_attempt_failure,
)
from activities.context import assemble_context
from activities.deps import GraphDeps
from activities.errors import ToolOutcomeError
from activities.memory import derive_tool_memory, memory_id_for
from activities.provenance import verify_provenance
from harness.scenarios.runner import context_text
from policy.enums import MessageRole, PrivacyClass, ResolutionStatus, RuntimeKind, ToolCallStatus
from policy.errors import UnknownParticipantError
from policy.records import EvidenceRequest, GenerationBoundary
from policy.tools import ToolCatalog, ToolSpec
from store import branches, conversations, messages, tool_memories
from store import tools as tool_store
from store.errors import ArtifactIntegrityError, ArtifactNotFoundError, BranchCycleError, NotFoundError
from store.models import ToolArtifact
from store.payloads import read_artifact_payload

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)

CATALOG = ToolCatalog(tools=(
    ToolSpec(name="crm.get_account", result_kind="json", key_args=("account_id",)),
    ToolSpec(name="logs.dump", result_kind="text"),
    ToolSpec(name="deploy.run", result_kind="text", retry_critical=True),
))


@dataclass(frozen=True)
class Chat:
    """A fresh account with one conversation, a user and an assistant."""

    deps: GraphDeps
    account_id: str
    conversation_id: str
    branch_id: str
    assistant_id: str

    async def call(self, name: str, arguments: dict, key: str, result: bytes | None = None,
                   status: ToolCallStatus = ToolCallStatus.SUCCEEDED, content_type: str = "application/json"):
        call = await begin_tool_call(
            self.deps, self.account_id, self.conversation_id, self.branch_id, self.assistant_id,
            call_id=f"call_{key}", name=name, arguments=arguments, runtime_kind=RuntimeKind.CHAT, at=T0,
        )
        if result is None:
            return call, None
        artifact = await capture_tool_result(
            self.deps, self.account_id, call.id, ToolOutcome(status=status, result=result, content_type=content_type),
            captured_at=T0,
        )
        return call, artifact

    async def say(self, text_: str) -> None:
        async with self.deps.sessions() as session, session.begin():
            await messages.append_message(session, self.account_id, self.conversation_id, self.branch_id,
                                          role=MessageRole.USER, content=text_)

    def boundary(self, **overrides) -> GenerationBoundary:
        fields = dict(account_id=self.account_id, conversation_id=self.conversation_id, branch_id=self.branch_id,
                      participant_id=self.assistant_id, runtime_kind=RuntimeKind.CHAT, provider_route="local",
                      now=T0 + timedelta(minutes=5))
        return GenerationBoundary(**{**fields, **overrides})


@pytest.fixture
async def chat(graph_deps: GraphDeps) -> Chat:
    deps = replace(graph_deps, catalog=CATALOG)
    async with deps.sessions() as session, session.begin():
        account_id = await conversations.create_account(session, name="activities test")
        conversation = await conversations.create_conversation(session, account_id, title="t")
        assistant = await conversations.add_participant(
            session, account_id, conversation.id, name="Assistant", provider="scripted", model="m")
    return Chat(deps, account_id, conversation.id, conversation.root_branch_id, assistant.id)


# --------------------------------------------------------------------------- capture


async def test_capture_is_once_per_tool_call_id(chat: Chat) -> None:
    call, artifact = await chat.call("crm.get_account", {"account_id": "A-1"}, "a", b'{"id":"A-1","tier":"gold"}')
    again_call, _ = await chat.call("crm.get_account", {"account_id": "A-1"}, "a")
    assert again_call.id == call.id  # the provider's call id is the idempotency key
    retried = await capture_tool_result(
        chat.deps, chat.account_id, call.id,
        ToolOutcome(status=ToolCallStatus.SUCCEEDED, result=b'{"id":"A-1","tier":"DIFFERENT"}'),
    )
    assert retried.id == artifact.id and retried.sha256 == artifact.sha256
    async with chat.deps.sessions() as session:
        count = len((await session.execute(
            select(ToolArtifact.id).where(ToolArtifact.account_id == chat.account_id,
                                          ToolArtifact.tool_call_id == call.id))).all())
        payload = await read_artifact_payload(session, chat.deps.artifacts, chat.account_id, artifact.id)
    assert count == 1
    assert payload == b'{"id":"A-1","tier":"gold"}'  # the first capture stands


async def test_only_final_outcomes_can_be_captured(chat: Chat) -> None:
    call, _ = await chat.call("crm.get_account", {"account_id": "A-1"}, "p")
    with pytest.raises(ToolOutcomeError, match="cannot capture a pending outcome"):
        await capture_tool_result(chat.deps, chat.account_id, call.id,
                                  ToolOutcome(status=ToolCallStatus.PENDING, result=b""))


async def test_malformed_tool_payload_is_kept_raw_and_flagged(chat: Chat) -> None:
    broken = b'{"id": "A-7", "owner": {"name": "Ann", "email": '  # cut off mid-object
    _, artifact = await chat.call("crm.get_account", {"account_id": "A-7"}, "m", broken)
    memory = await derive_tool_memory(chat.deps, chat.account_id, artifact.id)
    assert memory.confidence == 0.3
    assert memory.limitations.startswith("could not parse as json")
    async with chat.deps.sessions() as session:
        assert await read_artifact_payload(session, chat.deps.artifacts, chat.account_id, artifact.id) == broken
    await chat.say("What do we know about A-7?")
    assembled = await assemble_context(chat.deps, chat.boundary())
    text_ = context_text(assembled.result.messages)
    assert f"unparsed json result, {len(broken)} bytes" in text_
    assert "(confidence 0.30; could not parse as json" in text_


async def test_a_50_mb_payload_goes_out_of_line_and_round_trips(chat: Chat) -> None:
    line = b"2026-11-30T09:00:00Z INFO worker-7 processed batch with 5000 rows in 812 ms\n"
    payload = line * (50 * 1024 * 1024 // len(line) + 1)
    assert len(payload) >= 50 * 1024 * 1024
    _, artifact = await chat.call("logs.dump", {"service": "orders"}, "big", payload, content_type="text/plain")
    assert artifact.storage == "object" and artifact.storage_key is not None
    assert artifact.result_bytes == len(payload)
    assert artifact.sha256 == hashlib.sha256(payload).hexdigest()
    stored = await chat.deps.artifacts.stat(chat.account_id, artifact.storage_key)
    assert stored.size == len(payload)
    handle = await chat.deps.artifacts.get_file(chat.account_id, artifact.storage_key, artifact.sha256)
    with handle:
        assert hashlib.sha256(handle.read()).hexdigest() == artifact.sha256
    memory = await derive_tool_memory(chat.deps, chat.account_id, artifact.id)
    assert memory.summary.startswith(f"logs.dump(service=orders) → large text result, {len(payload)} bytes")
    assert "parse limit" in memory.limitations


async def test_failed_calls_keep_a_bounded_error_and_the_artifact_keeps_all_of_it(chat: Chat) -> None:
    call, _ = await chat.call("deploy.run", {"env": "prod"}, "d")
    frames = "".join(f'  File "/app/step_{i}.py", line {i}, in run\n' for i in range(2000))
    error = "deploy failed\nTraceback (most recent call last):\n" + frames + "PermissionError: s3:PutObject denied"
    assert len(error) > CALL_ERROR_MAX_CHARS
    await record_attempt_failure(chat.deps, chat.account_id, call.id, attempt=1, error=error, final=False, at=T0)
    artifact = await capture_tool_result(
        chat.deps, chat.account_id, call.id,
        ToolOutcome(status=ToolCallStatus.FAILED, result=error.encode(), content_type="text/plain", attempts=2),
    )
    async with chat.deps.sessions() as session:
        stored_call = await tool_store.get_tool_call(session, chat.account_id, call.id)
        raw = await read_artifact_payload(session, chat.deps.artifacts, chat.account_id, artifact.id)
    assert stored_call.status is ToolCallStatus.FAILED and stored_call.attempts == 2
    assert len(stored_call.last_error) < CALL_ERROR_MAX_CHARS + 100
    assert stored_call.last_error.endswith("PermissionError: s3:PutObject denied")
    assert raw == error.encode()
    await chat.say("Did it deploy?")
    assembled = await assemble_context(chat.deps, chat.boundary())
    text_ = context_text(assembled.result.messages)
    assert "FAILED after 2 attempt(s), retry-critical: deploy failed | [" in text_
    assert text_.count("PermissionError: s3:PutObject denied") == 1


# --------------------------------------------------------------------------- integrity


async def test_a_tampered_artifact_is_detected_on_read_and_never_rehydrated(chat: Chat, s3: Minio) -> None:
    original = json.dumps({"id": "A-9", "tier": "gold", "arr_eur": 120000}).encode()
    _, artifact = await chat.call("crm.get_account", {"account_id": "A-9"}, "t", original)
    memory = await derive_tool_memory(chat.deps, chat.account_id, artifact.id)
    forged = original.replace(b"120000", b"999999")
    # Someone with bucket access rewrites the object under the same key.
    s3.put_object(chat.deps.artifacts.bucket, artifact.storage_key, io.BytesIO(forged), len(forged))

    async with chat.deps.sessions() as session:
        with pytest.raises(ArtifactIntegrityError):
            await read_artifact_payload(session, chat.deps.artifacts, chat.account_id, artifact.id)
    # A shallow check sees an object and is satisfied; a deep one re-hashes it.
    assert await verify_provenance(chat.deps, chat.account_id, chat.conversation_id, chat.branch_id) == []
    changed = await verify_provenance(chat.deps, chat.account_id, chat.conversation_id, chat.branch_id, deep=True)
    assert [(m.id, m.resolution) for m in changed] == [(memory.id, ResolutionStatus.HASH_MISMATCH)]

    await chat.say("Quote the raw account record.")
    boundary = chat.boundary(evidence_requests=(EvidenceRequest(artifact_id=artifact.id, reason="quote"),))
    assembled = await assemble_context(chat.deps, boundary)
    text_ = context_text(assembled.result.messages)
    assert "raw evidence unavailable: the stored bytes failed their sha256 check" in text_
    assert "UNVERIFIED: source artifact failed its integrity check" in text_
    assert "999999" not in text_
    assert assembled.result.record.rehydrated_refs == ()

    # Restoring the original bytes repairs the memory; nothing was re-pointed.
    s3.put_object(chat.deps.artifacts.bucket, artifact.storage_key, io.BytesIO(original), len(original))
    repaired = await verify_provenance(chat.deps, chat.account_id, chat.conversation_id, chat.branch_id, deep=True)
    assert [(m.id, m.resolution) for m in repaired] == [(memory.id, ResolutionStatus.REPAIRED)]
    assert repaired[0].source_artifact_ids == (artifact.id,)


async def test_a_missing_object_marks_the_memory_with_the_real_artifact_id(chat: Chat) -> None:
    _, artifact = await chat.call("crm.get_account", {"account_id": "A-3"}, "gone", b'{"id":"A-3"}')
    memory = await derive_tool_memory(chat.deps, chat.account_id, artifact.id)
    await chat.deps.artifacts.delete(chat.account_id, artifact.storage_key)
    changed = await verify_provenance(chat.deps, chat.account_id, chat.conversation_id, chat.branch_id)
    assert [(m.id, m.resolution) for m in changed] == [(memory.id, ResolutionStatus.MISSING_SOURCE)]
    # Nothing is derived from bytes that are gone: the step fails loudly, and can be retried after a restore.
    _, orphan = await chat.call("crm.get_account", {"account_id": "A-4"}, "orphan", b'{"id":"A-4"}')
    await chat.deps.artifacts.delete(chat.account_id, orphan.storage_key)
    with pytest.raises(ArtifactNotFoundError):
        await derive_tool_memory(chat.deps, chat.account_id, orphan.id)


# --------------------------------------------------------------------------- unknown ids and cycles


async def test_unknown_ids_get_typed_errors(chat: Chat) -> None:
    missing = "00000000-0000-0000-0000-000000000000"
    with pytest.raises(NotFoundError, match="not found"):
        await capture_tool_result(chat.deps, chat.account_id, missing,
                                  ToolOutcome(status=ToolCallStatus.SUCCEEDED, result=b"{}"))
    with pytest.raises(NotFoundError):
        await derive_tool_memory(chat.deps, chat.account_id, missing)
    with pytest.raises(NotFoundError):
        await assemble_context(chat.deps, chat.boundary(branch_id=missing))
    with pytest.raises((NotFoundError, UnknownParticipantError)):
        await assemble_context(chat.deps, chat.boundary(participant_id=missing))
    # Another account's ids read as unknown, never as someone else's data.
    async with chat.deps.sessions() as session, session.begin():
        other = await conversations.create_account(session, name="other")
    with pytest.raises(NotFoundError):
        await assemble_context(chat.deps, chat.boundary(account_id=other))


async def test_a_cyclic_branch_is_refused_and_never_walked_forever(chat: Chat) -> None:
    await chat.say("root question")
    async with chat.deps.sessions() as session, session.begin():
        first = await messages.append_message(session, chat.account_id, chat.conversation_id, chat.branch_id,
                                              role=MessageRole.USER, content="fork here")
        a = await branches.fork_branch(session, chat.account_id, chat.conversation_id, chat.branch_id,
                                       first.id, name="a")
    with pytest.raises(BranchCycleError):
        async with chat.deps.sessions() as session, session.begin():
            await branches.reparent_branch(session, chat.account_id, chat.branch_id, a.id, first.id)
    # Data corrupted behind the store's back (trigger disabled) fails the assembly with the cycle named.
    async with chat.deps.sessions() as session, session.begin():
        await session.execute(text("ALTER TABLE branches DISABLE TRIGGER branches_no_cycle"))
        await session.execute(text("UPDATE branches SET parent_branch_id = :a, fork_seq = 1 WHERE id = :root"),
                              {"a": a.id, "root": chat.branch_id})
        await session.execute(text("ALTER TABLE branches ENABLE TRIGGER branches_no_cycle"))
    try:
        with pytest.raises(BranchCycleError) as caught:
            await assemble_context(chat.deps, chat.boundary(branch_id=a.id))
        assert set(caught.value.branch_ids) >= {a.id, chat.branch_id}
    finally:
        async with chat.deps.sessions() as session, session.begin():
            await session.execute(text("ALTER TABLE branches DISABLE TRIGGER branches_no_cycle"))
            await session.execute(text("UPDATE branches SET parent_branch_id = NULL, fork_seq = NULL WHERE id = :r"),
                                  {"r": chat.branch_id})
            await session.execute(text("ALTER TABLE branches ENABLE TRIGGER branches_no_cycle"))


# --------------------------------------------------------------------------- memory linking


async def test_a_newer_result_for_the_same_subject_supersedes_and_a_failure_does_not(chat: Chat) -> None:
    _, first = await chat.call("crm.get_account", {"account_id": "A-5"}, "v1", b'{"id":"A-5","tier":"silver"}')
    old = await derive_tool_memory(chat.deps, chat.account_id, first.id)
    _, failed = await chat.call("crm.get_account", {"account_id": "A-5"}, "v2", b"HTTP 503",
                                status=ToolCallStatus.FAILED, content_type="text/plain")
    await derive_tool_memory(chat.deps, chat.account_id, failed.id)
    _, second = await chat.call("crm.get_account", {"account_id": "A-5"}, "v3", b'{"id":"A-5","tier":"gold"}')
    new = await derive_tool_memory(chat.deps, chat.account_id, second.id)
    assert new.id == memory_id_for(second.id)
    assert old.id in new.supersedes
    async with chat.deps.sessions() as session:
        reread = await tool_memories.get_tool_memory(session, chat.account_id, old.id)
    assert reread.superseded_by == new.id
    await chat.say("Which tier is A-5?")
    text_ = context_text((await assemble_context(chat.deps, chat.boundary())).result.messages)
    assert "tier=gold" in text_ and "tier=silver" not in text_


async def test_memory_privacy_is_never_looser_than_its_artifact(chat: Chat) -> None:
    call = await begin_tool_call(
        chat.deps, chat.account_id, chat.conversation_id, chat.branch_id, chat.assistant_id,
        call_id="call_mail", name="crm.get_account", arguments={"account_id": "A-6"},
        runtime_kind=RuntimeKind.CHAT, privacy=PrivacyClass.GOOGLE_DERIVED, at=T0,
    )
    artifact = await capture_tool_result(chat.deps, chat.account_id, call.id,
                                         ToolOutcome(status=ToolCallStatus.SUCCEEDED, result=b'{"id":"A-6"}'))
    memory = await derive_tool_memory(chat.deps, chat.account_id, artifact.id)
    assert artifact.privacy is PrivacyClass.GOOGLE_DERIVED
    assert memory.privacy is PrivacyClass.GOOGLE_DERIVED
    await chat.say("What do we have on A-6?")
    public = await assemble_context(chat.deps, chat.boundary(provider_route="public-only"))
    assert "A-6" not in context_text(public.result.messages).split("What do we have")[0]
