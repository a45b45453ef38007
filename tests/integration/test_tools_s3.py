"""``files.write`` against real S3, and the analyst citing the handle it produced.

The unit tests cover name rules and failure sorting; here the bytes really
go to the session's bucket, come back verified by hash, and the handle goes
through derivation, assembly and the scripted analyst's final answer.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from minio import Minio

from activities.providers.base import ModelRequest
from activities.providers.scripted import ScriptedProvider
from activities.tools.base import ToolContext
from activities.tools.registry import ToolRegistry, default_registry
from dossier.runtime import SAMPLE_WORKSPACE
from policy.assembler import assemble, short_ids_for
from policy.derive import FILE_CONTENT_TYPE, derive_memory, memory_record
from policy.enums import MessageRole, PrivacyClass, RuntimeKind, ToolCallStatus, VisibilityScope
from policy.policy import DEFAULT_POLICY
from policy.records import (
    ArtifactRecord,
    CandidateSet,
    GenerationBoundary,
    Lineage,
    LineageStep,
    MessageRecord,
    ParticipantRecord,
    ToolCallRecord,
    ToolMemoryRecord,
)
from store.artifacts import ArtifactStore, ObjectRef, object_key
from store.errors import ArtifactNotFoundError

pytestmark = pytest.mark.integration

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
REPORT = (
    "# Q3 revenue by region\n\n| region | revenue_eur |\n|---|---:|\n"
    "| Benelux | 133510.04 |\n| Müller GmbH | 1.00 |\n"
)


def _context(store: ArtifactStore, account: str, attempt: int = 1, privacy: PrivacyClass = PrivacyClass.USER,
             recorded: list[tuple[ObjectRef, PrivacyClass, bool]] | None = None) -> ToolContext:
    """An attempt's context; its recorder notes each ref (and whether the object already existed) in ``recorded``.

    These accounts have no rows: the graph's record itself is tested in ``test_stored_objects.py``.
    """

    async def record(ref: ObjectRef, privacy: PrivacyClass) -> None:
        (recorded if recorded is not None else []).append((ref, privacy, await store.exists(account, ref.key)))

    # The call's class (execute_tool passes the recorded call's): what the written file is labelled.
    return ToolContext(account_id=account, tool_call_id="tc-s3", attempt=attempt, workspace=SAMPLE_WORKSPACE,
                       artifacts=store, privacy=privacy, record_object=record)


async def test_write_stores_the_bytes_and_returns_a_handle(artifact_store: ArtifactStore) -> None:
    registry = default_registry()
    recorded: list[tuple[ObjectRef, PrivacyClass, bool]] = []
    result = await registry.execute("files.write", _context(artifact_store, "acct-files", recorded=recorded),
                                    {"name": "q3-report.md", "content": REPORT})
    assert result.content_type == FILE_CONTENT_TYPE
    handle = json.loads(result.payload)
    data = REPORT.encode()
    digest = hashlib.sha256(data).hexdigest()
    key = object_key("acct-files", digest)
    assert handle == {"name": "q3-report.md", "bytes": len(data), "sha256": digest,
                      "uri": f"s3://{artifact_store.bucket}/{key}"}
    assert await artifact_store.get("acct-files", key, digest) == data
    stored = await artifact_store.stat("acct-files", key)
    assert stored.content_type == "text/markdown; charset=utf-8"
    assert await artifact_store.privacy_of("acct-files", key) is PrivacyClass.USER
    # Recorded once, with its class, before the object existed; the result names it for the capture to claim.
    assert recorded == [(stored.model_copy(update={"sha256": digest, "size": len(data)}), PrivacyClass.USER, False)]
    assert [ref.key for ref in result.objects] == [key]


async def test_a_written_file_carries_its_calls_class_not_the_tools(artifact_store: ArtifactStore) -> None:
    """Taint: a file written from google_derived arguments is google_derived, whatever files.write's spec says."""
    registry = default_registry()
    context = _context(artifact_store, "acct-files-taint", privacy=PrivacyClass.GOOGLE_DERIVED)
    result = await registry.execute("files.write", context, {"name": "inbox.md", "content": "From: Gmail thread"})
    key = object_key("acct-files-taint", json.loads(result.payload)["sha256"])
    assert await artifact_store.privacy_of("acct-files-taint", key) is PrivacyClass.GOOGLE_DERIVED


async def test_a_retried_write_returns_the_same_handle_and_uploads_nothing(
    artifact_store: ArtifactStore, s3: Minio, s3_bucket: str
) -> None:
    registry = default_registry()
    arguments = {"name": "retry.md", "content": "# written once\n"}
    first = await registry.execute("files.write", _context(artifact_store, "acct-retry", 1), arguments)
    key = json.loads(first.payload)["uri"].removeprefix(f"s3://{s3_bucket}/")
    stamp = s3.stat_object(s3_bucket, key).last_modified
    second = await registry.execute("files.write", _context(artifact_store, "acct-retry", 2), arguments)
    assert second == first
    assert s3.stat_object(s3_bucket, key).last_modified == stamp
    assert [o.object_name for o in s3.list_objects(s3_bucket, prefix="accounts/acct-retry/", recursive=True)] == [key]


async def test_a_file_belongs_to_its_account(artifact_store: ArtifactStore) -> None:
    result = await default_registry().execute("files.write", _context(artifact_store, "acct-owner-files"),
                                              {"name": "mine.md", "content": "private numbers\n"})
    handle = json.loads(result.payload)
    key = handle["uri"].removeprefix(f"s3://{artifact_store.bucket}/")
    assert key.startswith("accounts/acct-owner-files/sha256/")
    with pytest.raises(ArtifactNotFoundError):
        await artifact_store.get("acct-other", key, handle["sha256"])


# --------------------------------------------------------------------------- the analyst cites the real handle


class _Branch:
    """Just enough of the runtime graph to assemble the analyst's context from real results."""

    def __init__(self, registry: ToolRegistry) -> None:
        self.registry = registry
        self.seq = 0
        self.calls: list[ToolCallRecord] = []
        self.artifacts: list[ArtifactRecord] = []
        self.memories: list[ToolMemoryRecord] = []
        self.messages: list[MessageRecord] = []

    def next(self) -> int:
        self.seq += 1
        return self.seq

    def say(self, text: str) -> None:
        number = self.next()
        self.messages.append(MessageRecord(id=f"msg-{number}", branch_id="br", seq=number, role=MessageRole.USER,
                                           content=text))

    def capture(self, call_id: str, name: str, arguments: dict[str, Any], payload: bytes, content_type: str) -> None:
        spec = self.registry.get(name).spec
        number = self.next()
        call = ToolCallRecord(id=f"00000000-0000-4000-8000-{number:012d}", call_id=call_id, name=name,
                              arguments=arguments, status=ToolCallStatus.SUCCEEDED, branch_id="br", seq=number,
                              participant_id="p-analyst")
        artifact = ArtifactRecord(
            id=f"a{number:07d}-0000-4000-8000-000000000000", tool_call_id=call.id, call_id=call_id, tool_name=name,
            status=ToolCallStatus.SUCCEEDED, branch_id="br", seq=number, owner_participant_id="p-analyst",
            visibility=VisibilityScope.BRANCH, privacy=spec.privacy, content_type=content_type,
            sha256=hashlib.sha256(payload).hexdigest(), result_bytes=len(payload), arguments_bytes=2,
            storage="inline", captured_at=NOW,
        )
        draft = derive_memory(spec, artifact.id, arguments, ToolCallStatus.SUCCEEDED, payload,
                              content_type=content_type, observed_at=NOW)
        self.calls.append(call)
        self.artifacts.append(artifact)
        memory = memory_record(draft, artifact, memory_id=f"{number:08d}-1111-4000-8000-000000000000")
        self.memories.append(memory.model_copy(update={"seq": number}))

    def request(self, run: int) -> ModelRequest:
        participant = ParticipantRecord(id="p-analyst", name="Analyst", provider="scripted", model="analyst",
                                        system_prompt="You are Analyst. Use your tools; cite result ids.")
        candidates = self.candidates(participant)
        boundary = GenerationBoundary(account_id="acct-analyst", conversation_id="conv", branch_id="br",
                                      participant_id="p-analyst", runtime_kind=RuntimeKind.CHAT,
                                      provider_route="scripted", token_budget=100_000, now=NOW)
        messages = assemble(DEFAULT_POLICY, boundary, candidates, lambda text: len(text.split()) + 1).messages
        return ModelRequest(run_id=f"{run:08d}-run", model="analyst", participant_name="Analyst", messages=messages,
                            tools=tuple(self.registry.schemas()))

    def candidates(self, participant: ParticipantRecord) -> CandidateSet:
        return CandidateSet(snapshot_seq=self.seq, lineage=Lineage(steps=(LineageStep(branch_id="br"),)),
                            participants=(participant,), messages=tuple(self.messages), tool_calls=tuple(self.calls),
                            artifacts=tuple(self.artifacts), tool_memories=tuple(self.memories))


async def test_the_analyst_answers_with_the_uri_of_the_report_it_wrote_to_s3(artifact_store: ArtifactStore) -> None:
    registry = default_registry()
    branch = _Branch(registry)
    branch.say("Summarise Q3 revenue by region and write me a short report.")
    provider = ScriptedProvider()
    for run in range(1, 6):
        response = await provider.generate(branch.request(run))
        if not response.tool_calls:
            break
        [planned] = response.tool_calls
        result = await registry.execute(planned.name, _context(artifact_store, "acct-analyst"), planned.arguments)
        branch.capture(planned.call_id, planned.name, planned.arguments, result.payload, result.content_type)
    else:
        pytest.fail("the analyst never answered")

    written = [c for c in branch.calls if c.name == "files.write"]
    assert [c.name for c in branch.calls] == ["workspace.list_files", "workspace.read_csv", "table.aggregate",
                                             "files.write"]
    report = written[0].arguments["content"]
    digest = hashlib.sha256(report.encode()).hexdigest()
    key = object_key("acct-analyst", digest)
    # The report really is in S3, byte for byte, and the answer points at it.
    assert (await artifact_store.get("acct-analyst", key, digest)).decode() == report
    short = short_ids_for(branch.candidates(ParticipantRecord(id="p-analyst", name="Analyst")))
    file_memory = branch.memories[-1]
    assert response.text.endswith(
        f"The report is {written[0].arguments['name']}, {len(report.encode())} bytes at "
        f"s3://{artifact_store.bucket}/{key} [m:{short(file_memory.id)}]."
    )
    assert "total 458080.39" in response.text
