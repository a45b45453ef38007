"""An in-memory conversation for driving scripted models through real assembled contexts.

``World`` keeps the records the runtime graph would hold (transcript, tool
calls, artifacts, memories, checkpoints) for one branch, and runs the loop
the agent workflow runs, without Postgres, S3 or Temporal:

1. assemble the participant's context with the real policy
   (:func:`policy.assembler.assemble`), in the cache epoch of its previous
   call, as the context activity does;
2. ask the scripted provider;
3. run each tool call through the real registry, attempt by attempt up to
   the tool's ``max_attempts`` (a deferred call is left ``deferred``);
4. derive each result's memory with the real :func:`policy.derive.derive_memory`.

So every context a script reads here is what ``render.py`` produces from
what the tools really returned. Only object storage is absent: a test that
needs ``files.write`` to succeed passes ``content_addressed_files`` as a
stand-in, which returns the handle the artifact store would produce.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from activities.providers.base import ModelRequest, ModelResponse
from activities.providers.scripted import ScriptedProvider
from activities.tools.base import ToolArgumentError, ToolContext, ToolError, ToolExecutionError, ToolResult
from activities.tools.registry import ToolRegistry, default_registry
from dossier.runtime import SAMPLE_WORKSPACE
from policy.assembler import AssemblyResult, assemble, short_ids_for
from policy.derive import FILE_CONTENT_TYPE, derive_memory, memory_record
from policy.links import link_memory
from policy.native import native_call_id
from policy.enums import MessageRole, PrivacyClass, RuntimeKind, ToolCallStatus, VisibilityScope
from policy.policy import DEFAULT_POLICY
from policy.records import (
    ArtifactRecord,
    CandidateSet,
    ChatMessage,
    CheckpointRecord,
    GenerationBoundary,
    Lineage,
    LineageStep,
    MessageRecord,
    ParticipantRecord,
    PreviousAssembly,
    ToolCallRecord,
    ToolMemoryRecord,
)
from policy.tools import default_visibility
from store.artifacts import object_key

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
BRANCH = "br-main"
ACCOUNT = "acct-world"
BUCKET = "dossier-world"
VIEWER = "p-viewer"
_NAMESPACE = uuid.UUID("6b0c3f4e-1d2a-4c5b-9e8f-7a6b5c4d3e2f")

StandIn = Callable[[ToolContext, dict[str, Any]], Awaitable[ToolResult]]


def world_id(kind: str, number: int) -> str:
    """A deterministic UUID for the ``number``-th record of ``kind``."""
    return str(uuid.uuid5(_NAMESPACE, f"{kind}-{number}"))


async def content_addressed_files(context: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    """``files.write`` without object storage: the handle ``ArtifactStore.put`` would return."""
    data = arguments["content"].encode()
    digest = hashlib.sha256(data).hexdigest()
    handle = {"name": arguments["name"], "bytes": len(data), "sha256": digest,
              "uri": f"s3://{BUCKET}/{object_key(context.account_id, digest)}"}
    return ToolResult(payload=json.dumps(handle).encode(), content_type=FILE_CONTENT_TYPE)


def _counter(text: str) -> int:
    # Token counts only matter against the budget, which these tests set far above any context.
    return len(text.split()) + 1


class World:
    """One branch of a conversation with one scripted participant (and optional other speakers).

    Args:
        model: the script name (``analyst`` for ``scripted:analyst``).
        name: the participant's name.
        runtime_kind: the runtime mode of its runs.
        registry: the tools (default: :func:`default_registry`).
        workspace: the data folder the tools read.
        stand_ins: tool name -> replacement run function (only for tools
            whose real backend is absent in unit tests).
        offer_tools: offer the registry's schemas to the model.
    """

    def __init__(
        self,
        model: str,
        *,
        name: str = "Analyst",
        runtime_kind: RuntimeKind = RuntimeKind.CHAT,
        registry: ToolRegistry | None = None,
        workspace: Path = SAMPLE_WORKSPACE,
        stand_ins: dict[str, StandIn] | None = None,
        offer_tools: bool = True,
    ) -> None:
        self.model = model
        self.runtime_kind = runtime_kind
        self.registry = registry or default_registry()
        self.workspace = workspace
        self.stand_ins = stand_ins or {}
        self.offer_tools = offer_tools
        self.now = NOW
        self.viewer = ParticipantRecord(id=VIEWER, name=name, provider="scripted", model=model,
                                        system_prompt=f"You are {name}. Use your tools; cite result ids.")
        self.participants: list[ParticipantRecord] = [self.viewer]
        self.messages: list[MessageRecord] = []
        self.calls: list[ToolCallRecord] = []
        self.artifacts: list[ArtifactRecord] = []
        self.memories: list[ToolMemoryRecord] = []
        self.checkpoints: list[CheckpointRecord] = []
        self.requests: list[ModelRequest] = []
        self.payloads: dict[str, bytes] = {}
        """Raw result bytes by artifact id (what the artifact store would hold)."""
        self.assemblies: list[AssemblyResult] = []
        """The context of every model call, in order."""
        self._previous: PreviousAssembly | None = None
        self._seq = 0
        self._runs = 0
        self._heartbeats: list[object] = []

    # ------------------------------------------------------------------ writing the graph

    def _next(self) -> int:
        self._seq += 1
        return self._seq

    def add_participant(self, name: str, *, role: str = "assistant") -> str:
        """Another speaker; returns its id."""
        participant = ParticipantRecord(id=f"p-{name.lower()}", name=name, role=role)
        self.participants.append(participant)
        return participant.id

    def say(self, content: str, *, label: str | None = None, author: str | None = None,
            directive: bool = False) -> MessageRecord:
        """A transcript message: the human's (no author), another participant's (author), or a directive."""
        role = MessageRole.ASSISTANT if author else MessageRole.USER
        message = MessageRecord(id=world_id("message", self._seq + 1), branch_id=BRANCH, seq=self._next(), role=role,
                                content=content, author_participant_id=author, speaker_label=label,
                                is_directive=directive)
        self.messages.append(message)
        return message

    def add_memory(self, summary: str, *, source_tool: str, title: str | None = None,
                   owner: str = VIEWER) -> ToolMemoryRecord:
        """A memory written by another step of the runtime (a promoted subagent report)."""
        number = self._next()
        memory = ToolMemoryRecord(
            id=world_id("memory", number), branch_id=BRANCH, seq=number, owner_participant_id=owner,
            source_artifact_ids=(), source_tool=source_tool, subject_key=f"{source_tool}:{number}",
            title=title or source_tool, summary=summary, visibility=VisibilityScope.BRANCH,
            privacy=PrivacyClass.USER, freshness="durable", observed_at=self.now,
        )
        self.memories.append(memory)
        return memory

    def add_checkpoint(self, kind: str, state: dict[str, Any], references: tuple[str, ...] = ()) -> CheckpointRecord:
        """A continuation checkpoint owned by the viewer."""
        number = self._next()
        checkpoint = CheckpointRecord(id=world_id("checkpoint", number), branch_id=BRANCH, seq=number,
                                      participant_id=VIEWER, kind=kind, state=state, references=references)
        self.checkpoints.append(checkpoint)
        return checkpoint

    # ------------------------------------------------------------------ assembling and generating

    def candidates(self) -> CandidateSet:
        """Everything on the branch, as the store would load it."""
        return CandidateSet(
            snapshot_seq=self._seq,
            lineage=Lineage(steps=(LineageStep(branch_id=BRANCH),)),
            participants=tuple(self.participants),
            messages=tuple(self.messages),
            tool_calls=tuple(self.calls),
            artifacts=tuple(self.artifacts),
            tool_memories=tuple(self.memories),
            checkpoints=tuple(self.checkpoints),
        )

    def cite(self, record: ToolMemoryRecord | ToolCallRecord | CheckpointRecord) -> str:
        """How the context cites ``record`` right now (``[m:3f2a91c0]``)."""
        kind = {ToolMemoryRecord: "m", ToolCallRecord: "t", CheckpointRecord: "c"}[type(record)]
        return f"[{kind}:{short_ids_for(self.candidates())(record.id)}]"

    def boundary(self) -> GenerationBoundary:
        """The viewer's next generation boundary."""
        return GenerationBoundary(
            account_id=ACCOUNT, conversation_id="conv-world", branch_id=BRANCH, participant_id=VIEWER,
            runtime_kind=self.runtime_kind, provider_route="scripted", token_budget=100_000, now=self.now,
        )

    def cited(self, tool: str) -> str:
        """How the last model call's context cited the newest result of ``tool``.

        A result the participant's own call fetched in the current epoch is its
        native tool message, cited by the call (``[t:...]``); an older one is a
        memory line of the prefix (``[m:...]``).
        """
        call = self.call_of(tool)
        shown = {m.tool_call_id for m in self.requests[-1].messages if m.role is MessageRole.TOOL}
        return self.cite(call) if native_call_id(call.id) in shown else self.cite(self.memory_of(tool))

    def assemble(self) -> AssemblyResult:
        """The viewer's context, assembled by the real policy, in the epoch of its previous model call."""
        return assemble(DEFAULT_POLICY, self.boundary(), self.candidates(), _counter, self.payloads, self._previous)

    def context(self) -> tuple[ChatMessage, ...]:
        """The assembled provider messages."""
        return self.assemble().messages

    def system_text(self) -> str:
        """The leading system messages of the current context (the prompt, then the runtime sections)."""
        leading = []
        for message in self.context():
            if message.role is not MessageRole.SYSTEM:
                break
            leading.append(message.content or "")
        return "\n\n".join(leading)

    def appended(self) -> list[ChatMessage]:
        """The messages after the current context's prefix (its epoch's appended events)."""
        result = self.assemble()
        assert result.record.epoch is not None
        return list(result.messages[result.record.epoch.prefix_messages:])

    def request(self, assembly: AssemblyResult | None = None) -> ModelRequest:
        """The request the next model call would send."""
        return ModelRequest(
            run_id=world_id("run", self._runs + 1), model=self.model, participant_name=self.viewer.name,
            messages=(assembly or self.assemble()).messages, tools=tuple(self.registry.schemas()) if self.offer_tools else (),
        )

    async def step(self) -> ModelResponse:
        """One model call: generate, record the reply, run its tool calls."""
        assembly = self.assemble()
        request = self.request(assembly)
        self.assemblies.append(assembly)
        self._previous = PreviousAssembly.of(assembly.record, self.boundary())
        self._runs += 1
        self.requests.append(request)
        response = await ScriptedProvider().generate(request)
        number = self._next()
        self.messages.append(MessageRecord(
            id=world_id("message", number), branch_id=BRANCH, seq=number, role=MessageRole.ASSISTANT,
            content=response.text, author_participant_id=VIEWER, speaker_label=self.viewer.name,
            tool_calls=response.tool_calls, model_run_id=request.run_id,
        ))
        for planned in response.tool_calls:
            await self._run_call(planned.call_id, planned.name, planned.arguments)
        return response

    async def run(self, max_steps: int = 10) -> ModelResponse:
        """Step until the model answers without calling tools (or a deferred call leaves it waiting)."""
        for _ in range(max_steps):
            response = await self.step()
            if not response.tool_calls:
                return response
        raise AssertionError(f"{self.model} did not answer within {max_steps} model calls")

    # ------------------------------------------------------------------ tools

    def _visibility(self) -> VisibilityScope:
        return default_visibility(self.runtime_kind)

    async def _run_call(self, call_id: str, name: str, arguments: dict[str, Any]) -> ToolCallRecord:
        tool = self.registry.get(name)
        number = self._next()
        record = ToolCallRecord(
            id=world_id("call", number), call_id=call_id, name=name, arguments=arguments,
            status=ToolCallStatus.PENDING, branch_id=BRANCH, seq=number, participant_id=VIEWER,
            runtime_kind=self.runtime_kind, retry_critical=tool.spec.retry_critical,
            visibility=self._visibility(), privacy=tool.spec.privacy,
        )
        if tool.deferred:
            prompt = arguments.get("prompt", "")
            record = record.model_copy(update={"status": ToolCallStatus.DEFERRED,
                                               "waiting_for": f"the user to answer: {prompt}"})
            self.calls.append(record)
            return record
        self.calls.append(record)
        error = ""
        for attempt in range(1, tool.max_attempts + 1):
            context = ToolContext(account_id=ACCOUNT, tool_call_id=record.id, attempt=attempt,
                                  workspace=self.workspace, artifacts=None, heartbeat=self._heartbeats.append)
            try:
                if name in self.stand_ins:
                    result = await self.stand_ins[name](context, arguments)
                else:
                    result = await self.registry.execute(name, context, arguments)
            except ToolArgumentError as failure:
                # Permanent: Temporal would not retry it either.
                return self._capture(record, ToolCallStatus.FAILED, f"ToolArgumentError: {failure}".encode(),
                                     "text/plain", attempt)
            except ToolExecutionError as failure:
                error = f"ToolExecutionError: {failure}"
                continue
            except ToolError as failure:
                return self._capture(record, ToolCallStatus.FAILED, f"{type(failure).__name__}: {failure}".encode(),
                                     "text/plain", attempt)
            return self._capture(record, ToolCallStatus.SUCCEEDED, result.payload, result.content_type, attempt)
        return self._capture(record, ToolCallStatus.FAILED, error.encode(), "text/plain", tool.max_attempts)

    def answer(self, call: ToolCallRecord, answer: dict[str, Any]) -> ToolMemoryRecord:
        """The human answers a deferred call (captured as its result, as the client does)."""
        return self._capture(call, ToolCallStatus.SUCCEEDED, json.dumps(answer).encode(), "application/json", 1)

    def deferred_calls(self) -> list[ToolCallRecord]:
        """Calls still waiting for the human."""
        return [c for c in self.calls if c.status is ToolCallStatus.DEFERRED]

    def _capture(self, record: ToolCallRecord, status: ToolCallStatus, payload: bytes, content_type: str,
                 attempts: int) -> ToolMemoryRecord:
        spec = self.registry.catalog().spec(record.name)
        updated = record.model_copy(update={
            "status": status, "attempts": attempts,
            "last_error": payload.decode() if status is ToolCallStatus.FAILED else None,
        })
        self.calls = [updated if c.id == record.id else c for c in self.calls]
        number = self._next()
        artifact = ArtifactRecord(
            id=world_id("artifact", number), tool_call_id=record.id, call_id=record.call_id, tool_name=record.name,
            status=status, branch_id=BRANCH, seq=number, owner_participant_id=VIEWER,
            runtime_kind=self.runtime_kind, visibility=record.visibility, privacy=spec.privacy,
            content_type=content_type, sha256=hashlib.sha256(payload).hexdigest(), result_bytes=len(payload),
            arguments_bytes=len(json.dumps(record.arguments)), storage="inline", captured_at=self.now,
        )
        self.artifacts.append(artifact)
        self.payloads[artifact.id] = payload
        draft = derive_memory(spec, artifact.id, record.arguments, status, payload, content_type=content_type,
                              observed_at=self.now)
        memory_id = world_id("memory", number)
        live = [(m.id, m.subject_key, m.payload.get("facts", {})) for m in self.memories if m.superseded_by is None]
        supersedes, conflicts = link_memory(draft.subject_key, draft.payload.get("facts", {}), live)
        self.memories = [m.model_copy(update={"superseded_by": memory_id}) if m.id in supersedes else m
                         for m in self.memories]
        memory = memory_record(draft, artifact, memory_id=memory_id, supersedes=tuple(supersedes),
                               conflicts_with=tuple(conflicts)).model_copy(update={"seq": number})
        self.memories.append(memory)
        return memory

    def call_of(self, tool: str) -> ToolCallRecord:
        """The newest call of ``tool``."""
        found = [c for c in self.calls if c.name == tool]
        assert found, f"no call of {tool}"
        return found[-1]

    def result_of(self, tool: str) -> bytes:
        """The raw bytes of the newest result of ``tool``."""
        found = [a for a in self.artifacts if a.tool_name == tool]
        assert found, f"no result of {tool}"
        return self.payloads[found[-1].id]

    def memory_of(self, tool: str) -> ToolMemoryRecord:
        """The newest live memory of ``tool``."""
        found = [m for m in self.memories if m.source_tool == tool and m.superseded_by is None]
        assert found, f"no memory of {tool}"
        return found[-1]

    def later(self, **delta: float) -> None:
        """Move the logical clock forward (``later(hours=13)``)."""
        self.now = self.now + timedelta(**delta)

    @property
    def heartbeats(self) -> list[object]:
        """Heartbeat details the tools reported, in order."""
        return list(self._heartbeats)


__all__ = ["ACCOUNT", "BUCKET", "NOW", "VIEWER", "World", "content_addressed_files", "world_id"]
