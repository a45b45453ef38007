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

from activities.context import assemble_context
from activities.deps import GraphDeps
from activities.errors import ToolOutcomeError
from activities.ingest import (
    CALL_ERROR_MAX_CHARS,
    ToolOutcome,
    begin_tool_call,
    capture_tool_result,
    ingest_tool_result,
    ingested_result,
    memory_id_for,
    record_attempt_failure,
)
from activities.provenance import verify_provenance
from harness.scenarios.runner import context_text
from policy.enums import (
    DecisionOutcome,
    MessageRole,
    OmissionReason,
    PrivacyClass,
    ResolutionStatus,
    RuntimeKind,
    ToolCallStatus,
)
from policy.errors import UnknownParticipantError
from policy.records import EvidenceRequest, GenerationBoundary
from policy.tools import ToolCatalog, ToolSpec
from store import branches, conversations, messages, tool_memories
from store import tools as tool_store
from store.errors import ArtifactIntegrityError, ArtifactNotFoundError, BranchCycleError, NotFoundError
from store.candidates import CandidateLimits
from store.models import ToolArtifact, ToolMemory
from store.payloads import read_artifact_payload
from store.writes import NewMessage, NewToolCall

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
            self.deps, self.account_id, self.conversation_id, NewToolCall(
                branch_id=self.branch_id, participant_id=self.assistant_id, call_id=f"call_{key}", name=name,
                arguments=arguments, runtime_kind=RuntimeKind.CHAT, at=T0),
        )
        if result is None:
            return call, None
        ingested = await ingest_tool_result(
            self.deps, self.account_id, call.id, ToolOutcome(status=status, result=result, content_type=content_type),
            captured_at=T0,
        )
        return call, ingested

    async def say(self, text_: str) -> None:
        async with self.deps.sessions() as session, session.begin():
            await messages.append_message(session, self.account_id, self.conversation_id, NewMessage(
                branch_id=self.branch_id, role=MessageRole.USER, content=text_))

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


# --------------------------------------------------------------------------- ingest


class CountingReads:
    """An artifact store that counts reads, to prove ingest never reads back what it wrote."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.reads = 0

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    async def get(self, *args, **kwargs):
        self.reads += 1
        return await self.inner.get(*args, **kwargs)

    async def get_file(self, *args, **kwargs):
        self.reads += 1
        return await self.inner.get_file(*args, **kwargs)


async def _count(chat: Chat, model, **where) -> int:
    async with chat.deps.sessions() as session:
        stmt = select(model.id).where(model.account_id == chat.account_id,
                                      *(getattr(model, k) == v for k, v in where.items()))
        return len((await session.execute(stmt)).all())


async def test_ingest_derives_from_the_bytes_it_captured_without_reading_them_back(chat: Chat) -> None:
    counting = CountingReads(chat.deps.artifacts)
    chat = replace(chat, deps=replace(chat.deps, artifacts=counting))
    _, ingested = await chat.call("crm.get_account", {"account_id": "A-1"}, "a", b'{"id":"A-1","tier":"gold"}')
    assert ingested.artifact.storage == "object"  # the fixture sends every payload to S3
    assert counting.reads == 0
    assert ingested.memory.id == memory_id_for(ingested.artifact.id)
    assert ingested.memory.source_artifact_ids == (ingested.artifact.id,)
    assert "tier=gold" in ingested.memory.summary


async def test_ingest_is_once_per_tool_call_id(chat: Chat) -> None:
    call, first = await chat.call("crm.get_account", {"account_id": "A-1"}, "a", b'{"id":"A-1","tier":"gold"}')
    again_call, _ = await chat.call("crm.get_account", {"account_id": "A-1"}, "a")
    assert again_call.id == call.id  # the provider's call id is the idempotency key
    retried = await ingest_tool_result(
        chat.deps, chat.account_id, call.id,
        ToolOutcome(status=ToolCallStatus.SUCCEEDED, result=b'{"id":"A-1","tier":"DIFFERENT"}'),
    )
    assert retried == first  # the first capture and its memory stand; nothing new is written
    assert await ingested_result(chat.deps, chat.account_id, call.id) == first
    assert await _count(chat, ToolArtifact, tool_call_id=call.id) == 1
    assert await _count(chat, ToolMemory, id=first.memory.id) == 1
    async with chat.deps.sessions() as session:
        payload = await read_artifact_payload(session, chat.deps.artifacts, chat.account_id, first.artifact.id)
    assert payload == b'{"id":"A-1","tier":"gold"}'


async def test_a_result_not_yet_captured_is_reported_as_such(chat: Chat) -> None:
    call, _ = await chat.call("crm.get_account", {"account_id": "A-1"}, "n")
    assert await ingested_result(chat.deps, chat.account_id, call.id) is None


async def test_only_final_outcomes_can_be_ingested(chat: Chat) -> None:
    call, _ = await chat.call("crm.get_account", {"account_id": "A-1"}, "p")
    for step in (ingest_tool_result, capture_tool_result):
        with pytest.raises(ToolOutcomeError, match="cannot capture a pending outcome"):
            await step(chat.deps, chat.account_id, call.id, ToolOutcome(status=ToolCallStatus.PENDING, result=b""))
    assert await _count(chat, ToolArtifact, tool_call_id=call.id) == 0


async def test_a_capture_without_its_memory_gets_it_from_the_verified_stored_bytes(chat: Chat) -> None:
    """Recovery for results captured without a memory (a version that derived in a second step)."""
    call, _ = await chat.call("crm.get_account", {"account_id": "A-2"}, "r")
    artifact = await capture_tool_result(chat.deps, chat.account_id, call.id,
                                         ToolOutcome(status=ToolCallStatus.SUCCEEDED, result=b'{"id":"A-2"}'))
    assert await _count(chat, ToolMemory, id=memory_id_for(artifact.id)) == 0
    recovered = await ingested_result(chat.deps, chat.account_id, call.id)
    assert recovered is not None and recovered.artifact == artifact
    assert recovered.memory.id == memory_id_for(artifact.id)
    # Nothing is derived from bytes that are gone: the recovery fails loudly and can be retried after a restore.
    lost_call, _ = await chat.call("crm.get_account", {"account_id": "A-4"}, "orphan")
    lost = await capture_tool_result(chat.deps, chat.account_id, lost_call.id,
                                     ToolOutcome(status=ToolCallStatus.SUCCEEDED, result=b'{"id":"A-4"}'))
    await chat.deps.artifacts.delete(chat.account_id, lost.storage_key)
    with pytest.raises(ArtifactNotFoundError):
        await ingested_result(chat.deps, chat.account_id, lost_call.id)


async def test_malformed_tool_payload_is_kept_raw_and_flagged(chat: Chat) -> None:
    broken = b'{"id": "A-7", "owner": {"name": "Ann", "email": '  # cut off mid-object
    _, ingested = await chat.call("crm.get_account", {"account_id": "A-7"}, "m", broken)
    assert ingested.memory.confidence == 0.3
    assert ingested.memory.limitations.startswith("could not parse as json")
    async with chat.deps.sessions() as session:
        assert await read_artifact_payload(session, chat.deps.artifacts, chat.account_id,
                                           ingested.artifact.id) == broken
    await chat.say("What do we know about A-7?")
    assembled = await assemble_context(chat.deps, chat.boundary())
    text_ = context_text(assembled.result.messages)
    assert f"unparsed json result, {len(broken)} bytes" in text_
    assert "(confidence 0.30; could not parse as json" in text_


async def test_a_50_mb_payload_goes_out_of_line_and_round_trips(chat: Chat) -> None:
    line = b"2026-11-30T09:00:00Z INFO worker-7 processed batch with 5000 rows in 812 ms\n"
    payload = line * (50 * 1024 * 1024 // len(line) + 1)
    assert len(payload) >= 50 * 1024 * 1024
    _, ingested = await chat.call("logs.dump", {"service": "orders"}, "big", payload, content_type="text/plain")
    artifact = ingested.artifact
    assert artifact.storage == "object" and artifact.storage_key is not None
    assert artifact.result_bytes == len(payload)
    assert artifact.sha256 == hashlib.sha256(payload).hexdigest()
    stored = await chat.deps.artifacts.stat(chat.account_id, artifact.storage_key)
    assert stored.size == len(payload)
    handle = await chat.deps.artifacts.get_file(chat.account_id, artifact.storage_key, artifact.sha256)
    with handle:
        assert hashlib.sha256(handle.read()).hexdigest() == artifact.sha256
    memory = ingested.memory
    assert memory.summary.startswith(f"logs.dump(service=orders) → large text result, {len(payload)} bytes")
    assert "parse limit" in memory.limitations


async def test_failed_calls_keep_a_bounded_error_and_the_artifact_keeps_all_of_it(chat: Chat) -> None:
    call, _ = await chat.call("deploy.run", {"env": "prod"}, "d")
    frames = "".join(f'  File "/app/step_{i}.py", line {i}, in run\n' for i in range(2000))
    error = "deploy failed\nTraceback (most recent call last):\n" + frames + "PermissionError: s3:PutObject denied"
    assert len(error) > CALL_ERROR_MAX_CHARS
    await record_attempt_failure(chat.deps, chat.account_id, call.id, attempt=1, error=error, final=False, at=T0)
    ingested = await ingest_tool_result(
        chat.deps, chat.account_id, call.id,
        ToolOutcome(status=ToolCallStatus.FAILED, result=error.encode(), content_type="text/plain", attempts=2),
    )
    async with chat.deps.sessions() as session:
        stored_call = await tool_store.get_tool_call(session, chat.account_id, call.id)
        raw = await read_artifact_payload(session, chat.deps.artifacts, chat.account_id, ingested.artifact.id)
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
    _, ingested = await chat.call("crm.get_account", {"account_id": "A-9"}, "t", original)
    artifact, memory = ingested.artifact, ingested.memory
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


async def test_a_first_read_whose_bytes_fail_their_hash_is_recorded_as_not_shown_whole(
    chat: Chat, s3: Minio
) -> None:
    # The participant's unread result is planned whole (a native tool message, read from S3). When the
    # stored bytes fail their sha256 check, the model gets the summary and is told why, and the record
    # must say the same: not rehydrated, omitted for a hash mismatch (before the fix the decision still
    # said REHYDRATED "own result as a native tool message (raw)").
    await chat.say("Look up account A-9.")
    original = json.dumps({"id": "A-9", "tier": "gold", "arr_eur": 120000, "pad": "x" * 200}).encode()
    async with chat.deps.sessions() as session, session.begin():
        await messages.append_message(
            session, chat.account_id, chat.conversation_id, NewMessage(
                branch_id=chat.branch_id, role=MessageRole.ASSISTANT, content="",
                author_participant_id=chat.assistant_id,
                tool_calls=[{"call_id": "call_first", "name": "crm.get_account", "arguments": {"account_id": "A-9"}}]))
    call, ingested = await chat.call("crm.get_account", {"account_id": "A-9"}, "first", original)
    artifact = ingested.artifact

    intact = await assemble_context(chat.deps, chat.boundary())
    [shown] = [d for d in intact.result.decisions if d.subject_ref == f"tool_call:{call.id}" and d.kind == "appended"]
    assert shown.outcome is DecisionOutcome.REHYDRATED  # the planned first read, bytes intact
    assert f"artifact:{artifact.id}#native" in intact.result.record.rehydrated_refs
    assert "120000" in context_text(intact.result.messages)

    forged = original.replace(b"120000", b"999999")
    s3.put_object(chat.deps.artifacts.bucket, artifact.storage_key, io.BytesIO(forged), len(forged))
    assembled = await assemble_context(chat.deps, chat.boundary())
    text_ = context_text(assembled.result.messages)
    assert "999999" not in text_
    assert "raw bytes unavailable: the stored bytes failed their sha256 check" in text_
    assert assembled.result.record.rehydrated_refs == ()
    [decision] = [d for d in assembled.result.decisions
                  if d.subject_ref == f"tool_call:{call.id}" and d.kind == "appended"]
    assert decision.outcome is not DecisionOutcome.REHYDRATED
    assert decision.omission is OmissionReason.RAW_HASH_MISMATCH
    assert "sha256" in decision.reason
    assert assembled.result.record.omitted_counts[OmissionReason.RAW_HASH_MISMATCH.value] == 1
    # What was persisted says the same as what was returned.
    async with chat.deps.sessions() as session:
        stored = (await session.execute(text(
            "SELECT outcome, omission FROM policy_decisions WHERE context_assembly_id = :a AND subject_ref = :s "
            "AND kind = 'appended'"), {"a": assembled.assembly_id, "s": f"tool_call:{call.id}"})).one()
    assert tuple(stored) == (decision.outcome.value, OmissionReason.RAW_HASH_MISMATCH.value)


async def test_requested_evidence_whose_object_is_missing_is_recorded_as_not_rehydrated(chat: Chat) -> None:
    original = json.dumps({"id": "A-7", "tier": "silver"}).encode()
    _, ingested = await chat.call("crm.get_account", {"account_id": "A-7"}, "ev", original)
    await chat.deps.artifacts.delete(chat.account_id, ingested.artifact.storage_key)
    await chat.say("Quote the raw account record.")
    boundary = chat.boundary(evidence_requests=(EvidenceRequest(artifact_id=ingested.artifact.id, reason="quote"),))
    assembled = await assemble_context(chat.deps, boundary)
    assert "raw evidence unavailable: the stored object is missing" in context_text(assembled.result.messages)
    [decision] = [d for d in assembled.result.decisions if d.kind == "rehydration"]
    assert decision.outcome is DecisionOutcome.OMITTED
    assert decision.omission is OmissionReason.RAW_MISSING


async def test_a_same_size_forged_object_does_not_poison_a_later_identical_result(chat: Chat, s3: Minio) -> None:
    original = json.dumps({"id": "A-5", "tier": "gold", "arr_eur": 120000}).encode()
    _, first = await chat.call("crm.get_account", {"account_id": "A-5"}, "p1", original)
    forged = original.replace(b"120000", b"999999")  # same size, same key, metadata copied
    s3.put_object(chat.deps.artifacts.bucket, first.artifact.storage_key, io.BytesIO(forged), len(forged),
                  metadata={"sha256": first.artifact.sha256})
    _, again = await chat.call("crm.get_account", {"account_id": "A-5"}, "p2", original)
    assert again.artifact.storage_key == first.artifact.storage_key  # content-addressed: the same object
    async with chat.deps.sessions() as session:
        # The identical result re-verified the object and replaced the forgery (before: both reads failed).
        assert await read_artifact_payload(session, chat.deps.artifacts, chat.account_id, again.artifact.id) \
            == original
        assert await read_artifact_payload(session, chat.deps.artifacts, chat.account_id, first.artifact.id) \
            == original


async def test_a_missing_object_marks_the_memory_with_the_real_artifact_id(chat: Chat) -> None:
    _, ingested = await chat.call("crm.get_account", {"account_id": "A-3"}, "gone", b'{"id":"A-3"}')
    await chat.deps.artifacts.delete(chat.account_id, ingested.artifact.storage_key)
    changed = await verify_provenance(chat.deps, chat.account_id, chat.conversation_id, chat.branch_id)
    assert [(m.id, m.resolution) for m in changed] == [(ingested.memory.id, ResolutionStatus.MISSING_SOURCE)]


# --------------------------------------------------------------------------- unknown ids and cycles


async def test_unknown_ids_get_typed_errors(chat: Chat) -> None:
    missing = "00000000-0000-0000-0000-000000000000"
    with pytest.raises(NotFoundError, match="not found"):
        await ingest_tool_result(chat.deps, chat.account_id, missing,
                                 ToolOutcome(status=ToolCallStatus.SUCCEEDED, result=b"{}"))
    with pytest.raises(NotFoundError):
        await ingested_result(chat.deps, chat.account_id, missing)
    with pytest.raises(NotFoundError):
        await assemble_context(chat.deps, chat.boundary(branch_id=missing))
    with pytest.raises((NotFoundError, UnknownParticipantError)):
        await assemble_context(chat.deps, chat.boundary(participant_id=missing))
    # Another account's ids read as unknown, never as someone else's data.
    async with chat.deps.sessions() as session, session.begin():
        other = await conversations.create_account(session, name="other")
    with pytest.raises(NotFoundError):
        await assemble_context(chat.deps, chat.boundary(account_id=other))
    call, _ = await chat.call("crm.get_account", {"account_id": "A-1"}, "x")
    with pytest.raises(NotFoundError):
        await ingested_result(chat.deps, other, call.id)


async def test_a_cyclic_branch_is_refused_and_never_walked_forever(chat: Chat) -> None:
    await chat.say("root question")
    async with chat.deps.sessions() as session, session.begin():
        first = await messages.append_message(session, chat.account_id, chat.conversation_id, NewMessage(
            branch_id=chat.branch_id, role=MessageRole.USER, content="fork here"))
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
    _, failed = await chat.call("crm.get_account", {"account_id": "A-5"}, "v2", b"HTTP 503",
                                status=ToolCallStatus.FAILED, content_type="text/plain")
    assert failed.memory.supersedes == ()  # a failure never erases the last good observation
    _, second = await chat.call("crm.get_account", {"account_id": "A-5"}, "v3", b'{"id":"A-5","tier":"gold"}')
    old, new = first.memory, second.memory
    assert new.id == memory_id_for(second.artifact.id)
    assert set(new.supersedes) == {old.id, failed.memory.id}
    async with chat.deps.sessions() as session:
        reread = await tool_memories.get_tool_memory(session, chat.account_id, old.id)
    assert reread.superseded_by == new.id
    await chat.say("Which tier is A-5?")
    text_ = context_text((await assemble_context(chat.deps, chat.boundary())).result.messages)
    assert "tier=gold" in text_ and "tier=silver" not in text_


async def test_linking_finds_a_subject_outside_the_assembly_candidate_pool(chat: Chat) -> None:
    """Supersession uses a targeted query by subject, not the bounded pool an assembly loads."""
    chat = replace(chat, deps=replace(chat.deps, limits=CandidateLimits(max_memories=2, max_artifacts=2)))
    _, oldest = await chat.call("crm.get_account", {"account_id": "A-8"}, "o", b'{"id":"A-8","tier":"silver"}')
    for index in range(4):  # newer memories of other subjects push the oldest out of any bounded pool
        await chat.call("crm.get_account", {"account_id": f"B-{index}"}, f"b{index}", b'{"id":"B","x":1}')
    _, newest = await chat.call("crm.get_account", {"account_id": "A-8"}, "n", b'{"id":"A-8","tier":"gold"}')
    assert newest.memory.supersedes == (oldest.memory.id,)


async def test_a_result_that_disagrees_on_a_shared_fact_is_linked_as_a_conflict(chat: Chat) -> None:
    deps = replace(chat.deps, catalog=ToolCatalog(tools=(*chat.deps.catalog.tools,
                                                        ToolSpec(name="billing.get_customer", result_kind="json"))))
    chat = replace(chat, deps=deps)
    _, crm = await chat.call("crm.get_account", {"account_id": "C-1"}, "crm", b'{"id":"C-1","email":"a@x.io"}')
    _, billing = await chat.call("billing.get_customer", {"customer": "C-1"}, "bill",
                                 b'{"id":"C-1","email":"b@x.io"}')
    _, agrees = await chat.call("billing.get_customer", {"customer": "C-1", "v": 2}, "bill2",
                                b'{"id":"C-1","plan":"pro"}')
    assert billing.memory.conflicts_with == (crm.memory.id,)
    assert agrees.memory.conflicts_with == ()


async def test_memory_privacy_is_never_looser_than_its_artifact(chat: Chat) -> None:
    call = await begin_tool_call(
        chat.deps, chat.account_id, chat.conversation_id, NewToolCall(
            branch_id=chat.branch_id, participant_id=chat.assistant_id, call_id="call_mail", name="crm.get_account",
            arguments={"account_id": "A-6"}, runtime_kind=RuntimeKind.CHAT, privacy=PrivacyClass.GOOGLE_DERIVED, at=T0),
    )
    ingested = await ingest_tool_result(chat.deps, chat.account_id, call.id,
                                        ToolOutcome(status=ToolCallStatus.SUCCEEDED, result=b'{"id":"A-6"}'))
    assert ingested.artifact.privacy is PrivacyClass.GOOGLE_DERIVED
    assert ingested.memory.privacy is PrivacyClass.GOOGLE_DERIVED
    await chat.say("What do we have on A-6?")
    public = await assemble_context(chat.deps, chat.boundary(provider_route="public-only"))
    assert "A-6" not in context_text(public.result.messages).split("What do we have")[0]
