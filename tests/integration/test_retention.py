"""Retention classes end to end: rules written with each record, applied by the retention workflow.

Real Postgres, S3 and a Temporal dev server with an in-process worker. Every
payload goes to S3 (the session's graph deps inline nothing), so each class is
seen on the object store as well as on the rows. The collection runs at a
logical ``now`` past the rules' periods (``run_retention(now=...)``), except
in the schedule test, which fires the real Temporal Schedule.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import event, select, update
from temporalio.testing import WorkflowEnvironment

from activities.providers.factory import ModelProviders
from activities.context import assemble_context
from activities.replay import recompute_assembly
from activities.deps import GraphDeps
from activities.tools.registry import default_registry
from activities.ingest import ToolOutcome, begin_tool_call, ingest_tool_result, memory_id_for
from dossier.retention import ensure_retention_schedule, retention_schedule_id, run_retention
from dossier.runtime import build_worker
from policy.derive import FILE_CONTENT_TYPE
from policy.enums import DecisionOutcome, MessageRole, ResolutionStatus, RuntimeKind, ToolCallStatus
from policy.records import GenerationBoundary, PolicyDecisionRecord
from policy.legacy import legacy_messages
from policy.records import canonical_json
from policy.retention import (
    ARGUMENTS_REDACTED,
    RAW_ARCHIVED_REASON,
    RAW_REDACTED_REASON,
    POINTER_REMOVED,
    REDACTED_MARKER,
    RESULT_REMOVED_TEXT,
    RecordKind,
    RetentionSpec,
)
from policy.tools import ToolCatalog, ToolSpec
from store import conversations, messages
from store.candidates import load_candidates
from store.errors import ArtifactRetainedError, AssemblyNotReplayableError
from store.models import (
    ContextAssembly,
    EvidenceRequest,
    Message,
    PolicyDecision,
    ToolArtifact,
    ToolCall,
    ToolMemory,
)
from store.payloads import read_artifact_payload
from store.retention import archive_key, collect_batch
from store.writes import NewMessage, NewToolCall

pytestmark = pytest.mark.integration

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def _rule(kind: str, days: int = 30) -> RetentionSpec:
    return RetentionSpec.model_validate({"artifacts": {"kind": kind, "after_days": days}})


CATALOG = ToolCatalog(tools=(
    ToolSpec(name="t.keep", result_kind="json"),
    ToolSpec(name="t.archive", result_kind="json", retention=_rule("archive")),
    ToolSpec(name="t.redact", result_kind="json", retention=_rule("redact")),
    ToolSpec(name="t.hash", result_kind="json", retention=_rule("hash_only")),
    ToolSpec(name="t.delete", result_kind="json", retention=_rule("delete")),
    ToolSpec(name="t.forget", result_kind="json", retention=RetentionSpec.model_validate(
        {"memories": {"kind": "delete", "after_days": 30}})),
    ToolSpec(name="files.write", result_kind="file", retention=_rule("delete", 0)),
))
CATALOG = CATALOG.model_copy(update={"tools": (*CATALOG.tools, *(
    spec for spec in default_registry().catalog().tools if spec.name not in {s.name for s in CATALOG.tools}))})
"""The test tools, and the built-in ones the worker registers (``files.write`` replaced by a collected one)."""


@dataclass(frozen=True)
class Account:
    """A fresh account with one conversation and an assistant, and a worker to collect with."""

    deps: GraphDeps
    temporal: WorkflowEnvironment
    task_queue: str
    account_id: str
    conversation_id: str
    branch_id: str
    assistant_id: str

    async def call(self, name: str, result: bytes, key: str | None = None, content_type: str = "application/json",
                   arguments: dict | None = None):
        call = await begin_tool_call(
            self.deps, self.account_id, self.conversation_id, NewToolCall(
                branch_id=self.branch_id, participant_id=self.assistant_id, call_id=f"call_{key or uuid.uuid4().hex}",
                name=name, arguments=arguments or {"q": name}, runtime_kind=RuntimeKind.CHAT, at=T0))
        return await ingest_tool_result(self.deps, self.account_id, call.id,
                                        ToolOutcome(status=ToolCallStatus.SUCCEEDED, result=result, content_type=content_type), captured_at=T0)

    async def collect(self, days: float) -> dict[str, int]:
        now = datetime.now(UTC) + timedelta(days=days)
        result = await run_retention(self.temporal.client, self.task_queue, now=now, batch_size=3)
        return result.actions

    async def payload(self, artifact_id: str) -> bytes:
        async with self.deps.sessions() as session:
            return await read_artifact_payload(session, self.deps.artifacts, self.account_id, artifact_id)

    async def row(self, model, row_id: str):  # noqa: ANN001, ANN201 - a model class, its row
        async with self.deps.sessions() as session:
            return await session.scalar(select(model).where(model.account_id == self.account_id, model.id == row_id))


async def _account(deps: GraphDeps, temporal: WorkflowEnvironment, task_queue: str,
                   config: dict | None = None) -> Account:
    async with deps.sessions() as session, session.begin():
        account_id = await conversations.create_account(session, name="retention test")
        conversation = await conversations.create_conversation(session, account_id, title="t")
        assistant = await conversations.add_participant(session, account_id, conversation.id, name="Assistant",
                                                        provider="scripted", model="m", config=config)
    return Account(deps, temporal, task_queue, account_id, conversation.id, conversation.root_branch_id, assistant.id)


@pytest.fixture
async def worker(temporal_env: WorkflowEnvironment, graph_deps: GraphDeps) -> AsyncIterator[tuple[GraphDeps, str]]:
    deps = replace(graph_deps, catalog=CATALOG)
    task_queue = f"retention-{uuid.uuid4().hex[:8]}"
    async with build_worker(temporal_env.client, deps, task_queue=task_queue,
                            workflow_failure_exception_types=[Exception], providers=ModelProviders()):
        yield deps, task_queue


@pytest.fixture
async def account(worker: tuple[GraphDeps, str], temporal_env: WorkflowEnvironment) -> Account:
    deps, task_queue = worker
    return await _account(deps, temporal_env, task_queue)


async def _exists(deps: GraphDeps, account_id: str, key: str) -> bool:
    return await deps.artifacts.exists(account_id, key)


# --------------------------------------------------------------------------- the classes


async def test_each_class_applies_after_its_period_and_not_before(account: Account) -> None:
    made = {name: await account.call(f"t.{name}", json.dumps({"tool": name, "v": 1}).encode())
            for name in ("keep", "archive", "redact", "hash", "delete")}
    keys = {name: ingested.artifact.storage_key for name, ingested in made.items()}

    await account.collect(days=29)  # before the 30 days: nothing happens
    for name, ingested in made.items():
        assert await account.payload(ingested.artifact.id) == json.dumps({"tool": name, "v": 1}).encode()

    await account.collect(days=31)
    keep, archive, redact, hash_only, delete = (made[n].artifact.id for n in ("keep", "archive", "redact", "hash",
                                                                                 "delete"))
    assert await account.payload(keep) == b'{"tool": "keep", "v": 1}'

    # archive: the bytes moved under the archive prefix; a read names the reason.
    with pytest.raises(ArtifactRetainedError) as archived:
        await account.payload(archive)
    assert archived.value.reason == RAW_ARCHIVED_REASON
    row = await account.row(ToolArtifact, archive)
    assert row.retention_state == "archived" and row.storage_key == archive_key(account.account_id, row.sha256)
    assert await account.deps.artifacts.get(account.account_id, row.storage_key, row.sha256) \
        == b'{"tool": "archive", "v": 1}'
    assert not await _exists(account.deps, account.account_id, keys["archive"])

    # redact: bytes gone, row (hash, size) and the memory's compact text kept, less the call's arguments.
    with pytest.raises(ArtifactRetainedError) as redacted:
        await account.payload(redact)
    assert redacted.value.reason == RAW_REDACTED_REASON
    row = await account.row(ToolArtifact, redact)
    assert (row.retention_state, row.storage_key, row.result_bytes) == ("redacted", None, len(b'{"tool": "redact", "v": 1}'))
    assert not await _exists(account.deps, account.account_id, keys["redact"])
    memory = await account.row(ToolMemory, made["redact"].memory.id)
    assert memory.summary == made["redact"].memory.summary.replace("(q=t.redact)", f"({ARGUMENTS_REDACTED})")
    assert memory.source_artifact_ids == [redact]

    # hash-only: bytes gone, sha256 and size kept, and nothing of the content in the memory either.
    row = await account.row(ToolArtifact, hash_only)
    assert (row.retention_state, row.sha256, row.result_bytes) == ("hash_only", made["hash"].artifact.sha256,
                                                                   len(b'{"tool": "hash", "v": 1}'))
    assert not await _exists(account.deps, account.account_id, keys["hash"])
    memory = await account.row(ToolMemory, made["hash"].memory.id)
    assert memory.summary == REDACTED_MARKER and "hash" not in json.dumps(memory.payload)
    assert set(memory.payload) == {"removed_sha256"}

    # delete: row and bytes gone; the memory says its source is missing, it does not point at nothing silently.
    assert await account.row(ToolArtifact, delete) is None
    assert await account.row(ToolCall, made["delete"].artifact.tool_call_id) is not None  # the call row stays
    assert not await _exists(account.deps, account.account_id, keys["delete"])
    memory = await account.row(ToolMemory, made["delete"].memory.id)
    assert memory.resolution == ResolutionStatus.MISSING_SOURCE.value

    # A second run at the same time finds everything done.
    again = await account.collect(days=31)
    assert not {k: v for k, v in again.items() if k.startswith("artifact:")} or all(
        k == "artifact:kept_cited" for k in again)


async def test_a_memory_rule_deletes_the_memory_and_keeps_the_artifact(account: Account) -> None:
    ingested = await account.call("t.forget", b'{"forget": "me"}')
    await account.collect(days=31)
    assert await account.row(ToolMemory, ingested.memory.id) is None
    assert await account.payload(ingested.artifact.id) == b'{"forget": "me"}'


async def test_the_agent_override_beats_the_tool_spec(worker: tuple[GraphDeps, str],
                                                      temporal_env: WorkflowEnvironment) -> None:
    deps, task_queue = worker
    keeper = await _account(deps, temporal_env, task_queue,
                            config={"agent": "keeper", "retention": {"artifacts": {"kind": "keep"}}})
    ingested = await keeper.call("t.delete", b'{"kept": "by the agent"}')
    assert (await keeper.row(ToolArtifact, ingested.artifact.id)).retention == "keep"
    await keeper.collect(days=31)
    assert await keeper.payload(ingested.artifact.id) == b'{"kept": "by the agent"}'


async def test_the_rule_is_read_once_and_written_by_the_inserts(worker: tuple[GraphDeps, str],
                                                                 temporal_env: WorkflowEnvironment) -> None:
    """One read of the participant's retention per captured call and per assembly, and no UPDATE after the
    INSERTs: the artifact, memory and assembly rows are inserted with their rule."""
    deps, task_queue = worker
    agent = {"agent": "brief", "retention": {"memories": {"kind": "redact", "after_days": 3},
                                             "traces": {"kind": "redact", "after_days": 7}}}
    ruled = await _account(deps, temporal_env, task_queue, config=agent)
    statements: list[str] = []

    def count(conn, cursor, statement, parameters, context, executemany) -> None:  # noqa: ANN001, ARG001
        statements.append(" ".join(statement.split()))

    def participant_reads() -> int:
        return sum(1 for s in statements if s.startswith("SELECT participants.config"))

    def retention_updates() -> list[str]:
        return [s for s in statements if s.startswith("UPDATE") and "retention" in s.split(" WHERE ")[0]]

    engine = deps.sessions.kw["bind"].sync_engine
    event.listen(engine, "before_cursor_execute", count)
    try:
        ingested = await ruled.call("t.delete", b'{"v": 1}')
        assert (participant_reads(), retention_updates()) == (1, [])
        statements.clear()
        boundary = GenerationBoundary(account_id=ruled.account_id, conversation_id=ruled.conversation_id,
                                      branch_id=ruled.branch_id, participant_id=ruled.assistant_id,
                                      runtime_kind=RuntimeKind.CHAT, provider_route="local", now=T0)
        assembled = await assemble_context(deps, boundary)
        assert (participant_reads(), retention_updates()) == (1, [])
    finally:
        event.remove(engine, "before_cursor_execute", count)
    artifact = await ruled.row(ToolArtifact, ingested.artifact.id)
    memory = await ruled.row(ToolMemory, ingested.memory.id)
    trace = await ruled.row(ContextAssembly, assembled.assembly_id)
    assert (artifact.retention, artifact.retention_days) == ("delete", 30)  # the tool's rule
    assert (memory.retention, memory.retention_days) == ("redact", 3)  # the agent's override
    assert (trace.retention, trace.retention_days) == ("redact", 7)


async def test_redacted_and_deleted_results_take_their_calls_arguments_with_them(account: Account) -> None:
    """The arguments can hold what the result held (a name searched for): they go with it, on the call's row
    and in the assistant message that wrote the call; the name, call id and a sha256 of the original stay."""
    made = {name: await account.call(f"t.{name}", json.dumps({"tool": name}).encode(),
                                     arguments={"patient": f"Jane Roe {name}"})
            for name in ("keep", "archive", "redact", "hash", "delete")}
    calls = {name: await account.row(ToolCall, ingested.artifact.tool_call_id) for name, ingested in made.items()}
    async with account.deps.sessions() as session, session.begin():
        message = await messages.append_message(
            session, account.account_id, account.conversation_id, NewMessage(
                branch_id=account.branch_id, role=MessageRole.ASSISTANT, content="",
                author_participant_id=account.assistant_id,
                tool_calls=[{"call_id": call.call_id, "name": call.name, "arguments": dict(call.arguments)}
                        for call in calls.values()]))
    await account.collect(days=31)
    again = await account.collect(days=31)  # idempotent: the marker keeps the first hash

    written = {entry["call_id"]: entry for entry in (await account.row(Message, message.id)).tool_calls}
    for name, before in calls.items():
        after = await account.row(ToolCall, before.id)
        assert (after.name, after.call_id) == (before.name, before.call_id)
        entry = written[before.call_id]
        assert entry["name"] == before.name
        if name in ("keep", "archive"):
            assert after.arguments == entry["arguments"] == {"patient": f"Jane Roe {name}"}
            continue
        marker = {"redacted_by_retention": ARGUMENTS_REDACTED,
                  "sha256": hashlib.sha256(canonical_json({"patient": f"Jane Roe {name}"}).encode()).hexdigest()}
        assert after.arguments == entry["arguments"] == marker
    assert not {k: v for k, v in again.items() if k.startswith("artifact:") and k != "artifact:kept_cited"}

    # What a model is shown of those calls afterwards: the marker's text, never the arguments, and no crash.
    boundary = GenerationBoundary(account_id=account.account_id, conversation_id=account.conversation_id,
                                  branch_id=account.branch_id, participant_id=account.assistant_id,
                                  runtime_kind=RuntimeKind.CHAT, provider_route="local", now=T0)
    assembled = await assemble_context(account.deps, boundary)
    async with account.deps.sessions() as session:
        stored = await session.scalar(select(ContextAssembly.messages).where(
            ContextAssembly.id == assembled.assembly_id))
        candidates = await load_candidates(session, account.account_id, account.conversation_id, account.branch_id)
    replayed = [m.to_openai() for m in legacy_messages(
        candidates, next(p for p in candidates.participants if p.id == account.assistant_id),
        {artifact.id: "raw" for artifact in candidates.artifacts})]
    for rendered in (stored, replayed):
        shown = next(m["tool_calls"] for m in rendered if m.get("tool_calls"))  # in the order they were written
        assert len(shown) == len(calls)
        for (name, call), written_call in zip(calls.items(), shown, strict=True):
            arguments = json.loads(written_call["function"]["arguments"])
            if name in ("keep", "archive"):
                assert arguments == {"patient": f"Jane Roe {name}"}
            else:
                assert arguments["redacted_by_retention"] == ARGUMENTS_REDACTED
        # Nothing of them anywhere: the memories' titles (``name(arguments)``) lost them with the call, and
        # under redact and delete the rest of the compact text stays (README "Retention and deletion").
        for name in ("redact", "hash", "delete"):
            assert f"Jane Roe {name}" not in json.dumps(rendered)
        # The call whose result was deleted says so; it never reads as a call still waiting for its result.
        results = [m.get("content") for m in rendered if m.get("role") == "tool"]
        assert RESULT_REMOVED_TEXT in results and not any("No result yet" in (r or "") for r in results)
    for name in ("redact", "delete"):
        memory = await account.row(ToolMemory, made[name].memory.id)
        assert memory.title == f"t.{name}({ARGUMENTS_REDACTED})" and memory.summary.startswith(memory.title)
        assert f"Jane Roe {name}" not in json.dumps([memory.title, memory.summary, memory.payload])
    assert "Jane Roe keep" in (await account.row(ToolMemory, made["keep"].memory.id)).title


async def test_a_deleted_memory_or_artifact_leaves_no_id_behind_in_links_or_recalls(account: Account) -> None:
    """Links to a deleted memory are removed in its batch; a recall of a deleted artifact keeps its question.

    Each call has its own subject, so ingestion links nothing by itself: the links are written here."""
    old = await account.call("t.keep", b'{"v": "old"}', arguments={"subject": "old"})
    older = await account.call("t.keep", b'{"v": "older"}', arguments={"subject": "older"})
    other = await account.call("t.keep", b'{"v": "other"}', arguments={"subject": "other"})
    doomed = await account.call("t.forget", b'{"v": "new"}', arguments={"subject": "new"})  # memory deleted at 30 d
    alt = await account.call("t.keep", b'{"v": "alt"}', arguments={"subject": "alt"})
    gone = await account.call("t.delete", b'{"v": "raw"}', arguments={"subject": "raw"})  # artifact deleted at 30 d
    new_id = doomed.memory.id
    recall = await begin_tool_call(account.deps, account.account_id, account.conversation_id, NewToolCall(
        branch_id=account.branch_id, participant_id=account.assistant_id, call_id=f"call_{uuid.uuid4().hex}",
        name="recall", arguments={"id": gone.artifact.id}, runtime_kind=RuntimeKind.CHAT, at=T0))
    async with account.deps.sessions() as session, session.begin():
        seq = (await account.row(ToolMemory, new_id)).seq
        links = {old.memory.id: {"superseded_by": new_id, "superseded_seq": seq},
                 older.memory.id: {"superseded_by": new_id, "superseded_seq": seq},
                 new_id: {"supersedes": [old.memory.id, older.memory.id], "conflicts_with": [other.memory.id]},
                 other.memory.id: {"conflicts_with": [new_id], "promoted_from": [new_id, alt.memory.id]},
                 alt.memory.id: {"supersedes": [older.memory.id]}}  # ``older`` was replaced by two memories
        for memory_id, values in links.items():
            await session.execute(update(ToolMemory).where(ToolMemory.id == memory_id).values(**values))
        session.add(EvidenceRequest(
            id=str(uuid.uuid4()), account_id=account.account_id, conversation_id=account.conversation_id,
            branch_id=account.branch_id, participant_id=account.assistant_id, tool_call_id=recall.id,
            requested_ref=f"a:{gone.artifact.id[:8]}", artifact_id=gone.artifact.id, outcome="rehydrated",
            decision={"subject_ref": f"artifact:{gone.artifact.id}"}, bytes_served=12))

    await account.collect(days=31)

    assert await account.row(ToolMemory, new_id) is None
    assert await account.row(ToolArtifact, gone.artifact.id) is None
    old_row, older_row = await account.row(ToolMemory, old.memory.id), await account.row(ToolMemory, older.memory.id)
    assert (old_row.superseded_by, old_row.superseded_seq) == (None, None)  # replaced by nothing left: live again
    assert older_row.superseded_by == alt.memory.id  # still replaced, by the replacement that is left
    other_row = await account.row(ToolMemory, other.memory.id)
    assert other_row.conflicts_with == [] and other_row.promoted_from == [alt.memory.id]
    async with account.deps.sessions() as session:
        asked = await session.scalar(select(EvidenceRequest).where(EvidenceRequest.tool_call_id == recall.id))
        ids = [value for row in (await session.scalars(select(ToolMemory).where(
            ToolMemory.account_id == account.account_id))).all()
            for value in (row.superseded_by, *row.supersedes, *row.conflicts_with, *row.promoted_from) if value]
    assert asked.artifact_id is None and asked.requested_ref == f"a:{gone.artifact.id[:8]}"
    assert new_id not in ids

    # A context built afterwards renders, and cites nothing that is gone.
    boundary = GenerationBoundary(account_id=account.account_id, conversation_id=account.conversation_id,
                                  branch_id=account.branch_id, participant_id=account.assistant_id,
                                  runtime_kind=RuntimeKind.CHAT, provider_route="local", now=T0)
    assembled = await assemble_context(account.deps, boundary)
    async with account.deps.sessions() as session:
        stored = json.dumps(await session.scalar(select(ContextAssembly.messages).where(
            ContextAssembly.id == assembled.assembly_id)))
    assert new_id[:8] not in stored


async def test_recalls_and_decisions_keep_a_removed_results_id_and_lose_its_pointers(account: Account) -> None:
    """Ids stay for audit (an id reveals nothing); a JSON pointer names keys of the result, so it goes with it:
    from the recall's locator and decision and from the assemblies' decisions about the artifact."""
    gone = await account.call("t.delete", b'{"patients": {"Jane Roe": 3}}', arguments={"subject": "visits"})
    pointer, subject = "/patients/Jane Roe", f"artifact:{gone.artifact.id}"
    recall = await begin_tool_call(account.deps, account.account_id, account.conversation_id, NewToolCall(
        branch_id=account.branch_id, participant_id=account.assistant_id, call_id=f"call_{uuid.uuid4().hex}",
        name="recall", arguments={"id": gone.artifact.id}, runtime_kind=RuntimeKind.CHAT, at=T0))
    async with account.deps.sessions() as session, session.begin():
        session.add(EvidenceRequest(
            id=str(uuid.uuid4()), account_id=account.account_id, conversation_id=account.conversation_id,
            branch_id=account.branch_id, participant_id=account.assistant_id, tool_call_id=recall.id,
            requested_ref=f"a:{gone.artifact.id[:8]}", artifact_id=gone.artifact.id, outcome="rehydrated",
            locator={"artifact_id": gone.artifact.id, "kind": "json_pointer", "pointer": pointer},
            decision={"kind": "recall", "subject_ref": subject, "outcome": "rehydrated", "omission": None,
                      "reason": f"recall of exact evidence ({pointer}): 1 of at most 4096 bytes",
                      "policy_version": "t"}, bytes_served=1))
    boundary = GenerationBoundary(account_id=account.account_id, conversation_id=account.conversation_id,
                                  branch_id=account.branch_id, participant_id=account.assistant_id,
                                  runtime_kind=RuntimeKind.CHAT, provider_route="local", now=T0)
    assembled = await assemble_context(account.deps, boundary, extra_decisions=(PolicyDecisionRecord(
        kind="rehydration", subject_ref=subject, outcome=DecisionOutcome.REHYDRATED,
        reason=f"exact evidence requested ({pointer}), up to 4096 bytes", policy_version="t"),))

    await account.collect(days=31)

    async with account.deps.sessions() as session:
        asked = await session.scalar(select(EvidenceRequest).where(EvidenceRequest.tool_call_id == recall.id))
        decisions = (await session.execute(select(PolicyDecision.subject_ref, PolicyDecision.reason).where(
            PolicyDecision.account_id == account.account_id))).all()
    assert asked.artifact_id is None and asked.decision["subject_ref"] == subject  # the id, for audit
    assert asked.locator["pointer"] == POINTER_REMOVED
    assert asked.decision["reason"] == f"recall of exact evidence ({POINTER_REMOVED}): 1 of at most 4096 bytes"
    assert (subject, f"exact evidence requested ({POINTER_REMOVED}), up to 4096 bytes") in decisions
    assert "Jane Roe" not in json.dumps([asked.locator, asked.decision, [tuple(d) for d in decisions]])
    assert assembled.assembly_id


@pytest.mark.parametrize("name", ["redact", "delete"])
async def test_a_recalls_copy_of_the_bytes_goes_with_its_source(account: Account, name: str) -> None:
    """``recall`` captures the bytes it served as its own result, under the recall tool's rule (keep): when
    the source's rule removes the raw result, the copy goes the same way, in the same batch."""
    raw = b'{"patients": {"Jane Roe": 3}}'
    source = await account.call(f"t.{name}", raw, arguments={"subject": "visits"})
    recall = await begin_tool_call(account.deps, account.account_id, account.conversation_id, NewToolCall(
        branch_id=account.branch_id, participant_id=account.assistant_id, call_id=f"call_{uuid.uuid4().hex}",
        name="recall", arguments={"id": source.artifact.id}, runtime_kind=RuntimeKind.CHAT, at=T0))
    copy = await ingest_tool_result(account.deps, account.account_id, recall.id,
                                    ToolOutcome(status=ToolCallStatus.SUCCEEDED, result=raw,
                                                content_type="application/json"), captured_at=T0)
    async with account.deps.sessions() as session, session.begin():
        session.add(EvidenceRequest(
            id=str(uuid.uuid4()), account_id=account.account_id, conversation_id=account.conversation_id,
            branch_id=account.branch_id, participant_id=account.assistant_id, tool_call_id=recall.id,
            requested_ref=f"a:{source.artifact.id[:8]}", artifact_id=source.artifact.id, outcome="rehydrated",
            decision={"subject_ref": f"artifact:{source.artifact.id}"}, bytes_served=len(raw)))
    assert (await account.row(ToolArtifact, copy.artifact.id)).retention == "keep"

    await account.collect(days=31)

    left = await account.row(ToolArtifact, copy.artifact.id)
    if name == "delete":
        assert left is None
    else:
        assert left.retention_state == "redacted" and left.storage_key is None
        with pytest.raises(ArtifactRetainedError):
            await account.payload(copy.artifact.id)
    assert not await _exists(account.deps, account.account_id, copy.artifact.storage_key)
    recall_row = await account.row(ToolCall, recall.id)
    assert recall_row.arguments["redacted_by_retention"] == ARGUMENTS_REDACTED


# --------------------------------------------------------------------------- shared objects and citations


async def test_a_shared_object_is_kept_while_another_row_refers_to_it(account: Account) -> None:
    same = b'{"shared": "bytes", "n": 42}'
    doomed = await account.call("t.delete", same)
    kept = await account.call("t.keep", same)
    assert doomed.artifact.storage_key == kept.artifact.storage_key  # content-addressed: one object
    await account.collect(days=31)
    assert await account.row(ToolArtifact, doomed.artifact.id) is None
    assert await account.payload(kept.artifact.id) == same


async def _file(account: Account, name: str, content: bytes):  # noqa: ANN202 - the file's ingested handle
    ref = await account.deps.artifacts.put(account.account_id, content, content_type="text/markdown")
    handle = {"name": name, "bytes": ref.size, "sha256": ref.sha256,
              "uri": f"s3://{account.deps.artifacts.bucket}/{ref.key}"}
    ingested = await account.call("files.write", json.dumps(handle).encode(), content_type=FILE_CONTENT_TYPE)
    return ingested, ref


async def test_a_cited_file_handle_is_not_collected_and_an_uncited_one_is(account: Account) -> None:
    cited, cited_ref = await _file(account, "report.md", b"# Q3 report\n")
    loose, loose_ref = await _file(account, "draft.md", b"# an old draft\n")
    async with account.deps.sessions() as session, session.begin():
        await messages.append_message(session, account.account_id, account.conversation_id, NewMessage(
            branch_id=account.branch_id, role=MessageRole.ASSISTANT,
            content=f"Your report: s3://{account.deps.artifacts.bucket}/{cited_ref.key}"))
    actions = await account.collect(days=1)
    assert actions.get("artifact:kept_cited", 0) >= 1
    assert await account.row(ToolArtifact, cited.artifact.id) is not None
    assert await account.deps.artifacts.get(account.account_id, cited_ref.key, cited_ref.sha256) == b"# Q3 report\n"
    assert await account.row(ToolArtifact, loose.artifact.id) is None
    assert not await _exists(account.deps, account.account_id, loose_ref.key)
    assert (await account.row(ToolMemory, loose.memory.id)).resolution == ResolutionStatus.MISSING_SOURCE.value


async def test_the_cited_file_check_scans_the_messages_once_per_batch(account: Account) -> None:
    cited, cited_ref = await _file(account, "kept.md", b"# kept\n")
    loose = [await _file(account, f"loose-{n}.md", f"# loose {n}\n".encode()) for n in range(3)]
    async with account.deps.sessions() as session, session.begin():
        await messages.append_message(session, account.account_id, account.conversation_id, NewMessage(
            branch_id=account.branch_id, role=MessageRole.ASSISTANT, content=f"See {cited.artifact.id}"))
    scans: list[str] = []

    def count(conn, cursor, statement, parameters, context, executemany) -> None:  # noqa: ANN001, ARG001
        if "FROM messages" in statement and "LIKE" in statement:
            scans.append(statement)

    engine = account.deps.sessions.kw["bind"].sync_engine
    event.listen(engine, "before_cursor_execute", count)
    try:
        batch = await collect_batch(account.deps.sessions, account.deps.artifacts, RecordKind.ARTIFACT,
                                    datetime.now(UTC) + timedelta(days=1), limit=5000, own_memory_id=memory_id_for)
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert batch.done and len(scans) == 1
    assert await account.row(ToolArtifact, cited.artifact.id) is not None
    assert await account.deps.artifacts.get(account.account_id, cited_ref.key, cited_ref.sha256) == b"# kept\n"
    for ingested, ref in loose:
        assert await account.row(ToolArtifact, ingested.artifact.id) is None
        assert not await _exists(account.deps, account.account_id, ref.key)


# --------------------------------------------------------------------------- assembly traces


async def test_a_trace_rule_drops_the_stored_messages_and_keeps_the_decisions(
        worker: tuple[GraphDeps, str], temporal_env: WorkflowEnvironment) -> None:
    deps, task_queue = worker
    traced = await _account(deps, temporal_env, task_queue,
                            config={"agent": "brief", "retention": {"traces": {"kind": "redact", "after_days": 7}}})
    await traced.call("t.keep", b'{"seen": "by the model"}')
    boundary = GenerationBoundary(account_id=traced.account_id, conversation_id=traced.conversation_id,
                                  branch_id=traced.branch_id, participant_id=traced.assistant_id,
                                  runtime_kind=RuntimeKind.CHAT, provider_route="local", now=T0)
    assembled = await assemble_context(deps, boundary)
    async with deps.sessions() as session:
        decisions = len((await session.scalars(select(PolicyDecision.ordinal).where(
            PolicyDecision.context_assembly_id == assembled.assembly_id))).all())
    assert decisions > 0
    await traced.collect(days=8)
    async with deps.sessions() as session:
        row = (await session.execute(select(ContextAssembly.messages, ContextAssembly.retention_state,
                                            ContextAssembly.assembled_tokens).where(
            ContextAssembly.id == assembled.assembly_id))).one()
        after = len((await session.scalars(select(PolicyDecision.ordinal).where(
            PolicyDecision.context_assembly_id == assembled.assembly_id))).all())
    assert row.messages == [] and row.retention_state == "redacted"
    with pytest.raises(AssemblyNotReplayableError, match="retention dropped its stored messages"):
        await recompute_assembly(deps, traced.account_id, assembled.assembly_id)
    assert row.assembled_tokens == assembled.result.record.assembled_tokens and after == decisions


# --------------------------------------------------------------------------- the schedule


async def test_the_collection_runs_as_a_temporal_schedule(worker: tuple[GraphDeps, str],
                                                          temporal_env: WorkflowEnvironment) -> None:
    deps, task_queue = worker
    account = await _account(deps, temporal_env, task_queue)
    schedule_id = await ensure_retention_schedule(temporal_env.client, task_queue)
    assert schedule_id == retention_schedule_id(task_queue)
    assert await ensure_retention_schedule(temporal_env.client, task_queue) == schedule_id  # idempotent
    try:
        loose, loose_ref = await _file(account, "tmp.md", b"# scratch\n")  # files.write here: delete after 0 days
        result = await run_retention(temporal_env.client, task_queue)  # triggers the schedule and waits
        assert result.actions.get("artifact:delete", 0) >= 1
        assert await account.row(ToolArtifact, loose.artifact.id) is None
        assert not await _exists(deps, account.account_id, loose_ref.key)
        description = await temporal_env.client.get_schedule_handle(schedule_id).describe()
        assert len(description.info.recent_actions) >= 1
    finally:
        await temporal_env.client.get_schedule_handle(schedule_id).delete()


# --------------------------------------------------------------------------- what a call owns, searched


@pytest.mark.parametrize("name", ["redact", "hash", "delete"])
async def test_no_text_of_a_removed_call_survives_anywhere_the_docs_do_not_name(account: Account, name: str) -> None:
    """A canary in a call's arguments and in its error text (a failed call's error is its result), on a call
    that failed once and then for good: after the rule, no row of the account holds it (every column of every
    table searched, :func:`store.text_sites.text_sites`) and neither does a context assembled afterwards."""
    from activities.ingest import record_attempt_failure
    from store.text_sites import text_sites

    canary = f"CANARY{name}{uuid.uuid4().hex[:12]}"
    call = await begin_tool_call(account.deps, account.account_id, account.conversation_id, NewToolCall(
        branch_id=account.branch_id, participant_id=account.assistant_id, call_id=f"call_{uuid.uuid4().hex}",
        name=f"t.{name}", arguments={"patient": f"Jane {canary}"}, runtime_kind=RuntimeKind.CHAT, at=T0))
    for attempt, final in ((1, False), (2, True)):
        await record_attempt_failure(account.deps, account.account_id, call.id, attempt=attempt, final=final,
                                     error=f"PermissionError: no record for Jane {canary} (attempt {attempt})", at=T0)
    error = f"Traceback ...\nPermissionError: no record for Jane {canary}"
    await ingest_tool_result(account.deps, account.account_id, call.id, ToolOutcome(
        status=ToolCallStatus.FAILED, result=error.encode(), content_type="text/plain", attempts=2), captured_at=T0)
    async with account.deps.sessions() as session:
        before = {(site.table, site.column) for site in await text_sites(session, account.account_id, canary)}
    assert {("tool_calls", "arguments"), ("tool_calls", "last_error"), ("tool_calls", "history"),
            ("tool_memories", "summary")} <= before  # the search finds what is there

    await account.collect(days=31)
    boundary = GenerationBoundary(account_id=account.account_id, conversation_id=account.conversation_id,
                                  branch_id=account.branch_id, participant_id=account.assistant_id,
                                  runtime_kind=RuntimeKind.CHAT, provider_route="local", now=T0)
    assembled = await assemble_context(account.deps, boundary)
    async with account.deps.sessions() as session:
        left = await text_sites(session, account.account_id, canary)
    assert not left, sorted({f"{s.table}.{s.column}" for s in left})
    assert canary not in json.dumps([m.to_openai() for m in assembled.result.messages])


async def test_a_later_call_with_the_same_arguments_still_supersedes_a_redacted_memory(account: Account) -> None:
    """The redacted memory's subject is a hash of the old one, not a different subject: the next read of
    the same record replaces it, as it would have replaced the unredacted one."""
    first = await account.call("t.redact", b'{"v": 1}', arguments={"patient": "Jane Roe"})
    await account.collect(days=31)
    redacted = await account.row(ToolMemory, first.memory.id)
    assert "Jane Roe" not in redacted.subject_key
    second = await account.call("t.redact", b'{"v": 2}', arguments={"patient": "Jane Roe"})
    assert first.memory.id in second.memory.supersedes
    other = await account.call("t.redact", b'{"v": 3}', arguments={"patient": "John Doe"})
    assert not other.memory.supersedes
