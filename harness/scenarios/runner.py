"""Replay a scenario into the real graph and assemble its measured model call.

Every step goes through the same I/O steps a live agent turn uses
(:mod:`activities.ingest`,
:mod:`activities.promotion`, :mod:`activities.context`); the runner only
translates scenario keys into graph ids and scenario minutes into times.
Each run writes into a fresh account, so runs never see each other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from activities.ingest import (
    ToolOutcome,
    begin_tool_call,
    ingest_tool_result,
    memory_id_for,
    defer_tool_call,
    record_attempt_failure,
)
from activities.context import AssembledContext, assemble_context
from activities.deps import GraphDeps
from activities.promotion import promote_child_results
from activities.provenance import verify_provenance
from harness.scenarios.model import (
    SCENARIO_START,
    AddParticipant,
    Ask,
    CallTool,
    Checkpoint,
    Fork,
    LoseArtifact,
    Promote,
    RememberUser,
    Say,
    Scenario,
    SetSkill,
)
from policy.assembler import short_ids_for
from policy.payloads import decode_payload
from policy.enums import MessageRole, ToolCallStatus
from policy.legacy import legacy_messages
from policy.records import (
    ChatMessage,
    ContextAssemblyRecord,
    EvidenceRequest,
    GenerationBoundary,
    Locator,
    PolicyDecisionRecord,
    ToolCallRequest,
)
from policy.tools import ToolCatalog
from store import branches, checkpoints, conversations, messages, skills, user_memories
from store import tools as tool_store
from store.errors import ArtifactStoreError
from store.payloads import read_artifact_payload
from store.records import AssemblyTimings
from store.writes import NewMessage, NewToolCall

_TEMPLATE = re.compile(r"\{([amt]):([A-Za-z0-9_\-]+)\}")


@dataclass(frozen=True)
class ScenarioOutcome:
    """What one scenario run produced and how it scored."""

    name: str
    account_id: str
    conversation_id: str
    assembly_id: str
    boundary: GenerationBoundary
    record: ContextAssemblyRecord
    decisions: tuple[PolicyDecisionRecord, ...]
    messages: tuple[ChatMessage, ...]
    legacy: tuple[ChatMessage, ...]
    required: tuple[str, ...]
    """Required facts with id templates expanded."""
    forbidden: tuple[str, ...]
    required_missing: list[str]
    forbidden_present: list[str]
    timings: AssemblyTimings
    """Graph query, policy and serialisation time of the measured assembly."""
    model_run_id: str | None = None
    """The model run of the measured call (its assembly is the run's)."""

    @property
    def legacy_tokens(self) -> int:
        """Tokens of full transcript replay at the measured call."""
        return self.record.legacy_tokens

    @property
    def assembled_tokens(self) -> int:
        """Tokens of Dossier's assembled context."""
        return self.record.assembled_tokens

    @property
    def reduction(self) -> float:
        """1 - assembled / legacy."""
        return 1 - self.assembled_tokens / self.legacy_tokens if self.legacy_tokens else 0.0


def context_text(chat: tuple[ChatMessage, ...] | list[ChatMessage]) -> str:
    """Everything a model would read in ``chat``: contents, tool-call ids, names and arguments."""
    parts: list[str] = []
    for message in chat:
        parts.append(message.content or "")
        parts += [f"{call.call_id} {call.name} {call.arguments}" for call in message.tool_calls]
    return "\n".join(parts)


class _Replay:
    """Scenario keys → graph ids, while the steps are written."""

    def __init__(self, scenario: Scenario, deps: GraphDeps) -> None:
        self.scenario = scenario
        self.deps = deps
        self.account_id = ""
        self.conversation_id = ""
        self.participants: dict[str, str] = {}
        self.participant_names: dict[str, str] = {}
        self.branches: dict[str, str] = {}
        self.messages: dict[str, str] = {}
        self.tool_calls: dict[str, str] = {}
        self.artifacts: dict[str, str] = {}

    @staticmethod
    def at(minutes: float) -> datetime:
        return SCENARIO_START + timedelta(minutes=minutes)

    async def open(self) -> None:
        async with self.deps.sessions() as session, session.begin():
            self.account_id = await conversations.create_account(session, name=f"scenario {self.scenario.name}")
            conversation = await conversations.create_conversation(
                session, self.account_id, title=self.scenario.name
            )
        self.conversation_id = conversation.id
        self.branches["main"] = conversation.root_branch_id

    async def step(self, step) -> None:
        handler = getattr(self, f"_{step.kind}")
        await handler(step)

    async def _participant(self, step: AddParticipant) -> None:
        async with self.deps.sessions() as session, session.begin():
            record = await conversations.add_participant(
                session, self.account_id, self.conversation_id,
                name=step.name, role=step.role, provider=step.provider, model=step.model,
                system_prompt=step.system_prompt,
                parent_participant_id=self.participants[step.parent] if step.parent else None,
            )
        self.participants[step.key] = record.id
        self.participant_names[step.key] = step.name

    async def _fork(self, step: Fork) -> None:
        async with self.deps.sessions() as session, session.begin():
            branch = await branches.fork_branch(
                session, self.account_id, self.conversation_id,
                self.branches[step.parent], self.messages[step.at_message], name=step.key,
            )
        self.branches[step.key] = branch.id

    async def _assistant_message(
        self, branch_id: str, author: str, runtime, text: str, calls: tuple[ToolCallRequest, ...] = (),
        label: str | None = None, directive: bool = False,
    ) -> str:
        async with self.deps.sessions() as session, session.begin():
            participant = await conversations.get_participant(session, self.account_id, author)
            run = await messages.start_model_run(
                session, self.account_id, self.conversation_id, branch_id, author,
                runtime_kind=runtime, provider=participant.provider, model=participant.model,
            )
            message = await messages.append_message(
                session, self.account_id, self.conversation_id, NewMessage(
                    branch_id=branch_id, role=MessageRole.ASSISTANT, content=text, author_participant_id=author,
                    speaker_label=label, is_directive=directive, model_run_id=run.id, tool_calls=calls),
            )
            await messages.finish_model_run(
                session, self.account_id, run.id, status="succeeded", message_id=message.id
            )
        return message.id

    async def _say(self, step: Say) -> None:
        branch_id = self.branches[step.branch]
        if step.author is None:
            async with self.deps.sessions() as session, session.begin():
                message = await messages.append_message(
                    session, self.account_id, self.conversation_id, NewMessage(
                        branch_id=branch_id, role=MessageRole.USER, content=step.text,
                        speaker_label=step.speaker_label),
                )
            message_id = message.id
        else:
            message_id = await self._assistant_message(
                branch_id, self.participants[step.author], step.runtime, step.text,
                label=step.speaker_label or self.participant_names[step.author], directive=step.directive,
            )
        if step.key:
            self.messages[step.key] = message_id

    async def _tool(self, step: CallTool) -> None:
        deps, account = self.deps, self.account_id
        branch_id = self.branches[step.branch]
        participant_id = self.participants[step.participant]
        when = self.at(step.at)
        call_id = f"call_{step.key}"
        call = await begin_tool_call(
            deps, account, self.conversation_id, NewToolCall(
                branch_id=branch_id, participant_id=participant_id, call_id=call_id, name=step.name,
                arguments=step.arguments, runtime_kind=step.runtime, at=when, visibility=step.visibility,
                privacy=step.privacy, shared_with=[self.participants[key] for key in step.shared_with],
                retry_critical=step.retry_critical or None),
        )
        self.tool_calls[step.key] = call.id
        request = ToolCallRequest(call_id=call_id, name=step.name, arguments=step.arguments)
        await self._assistant_message(
            branch_id, participant_id, step.runtime, step.assistant_text, (request,),
            label=self.participant_names[step.participant],
        )
        if step.status is ToolCallStatus.DEFERRED:
            await defer_tool_call(deps, account, call.id, step.waiting_for or "an external answer", when)
            return
        if step.status in (ToolCallStatus.PENDING, ToolCallStatus.RETRYING):
            if step.status is ToolCallStatus.RETRYING:
                await record_attempt_failure(
                    deps, account, call.id, attempt=step.attempts, error=step.result or "", final=False, at=when
                )
            return
        for attempt in range(1, step.attempts):
            await record_attempt_failure(
                deps, account, call.id, attempt=attempt, error=step.result or "", final=False, at=when
            )
        outcome = ToolOutcome(
            status=step.status, result=(step.result or "").encode(),
            content_type=step.content_type, attempts=step.attempts,
        )
        ingested = await ingest_tool_result(
            deps, account, call.id, outcome, captured_at=when, promotion=step.promotion,
        )
        self.artifacts[step.key] = ingested.artifact.id

    async def _promote(self, step: Promote) -> None:
        await promote_child_results(
            self.deps, self.account_id, self.conversation_id, self.branches[step.branch],
            child_participant_id=self.participants[step.child],
            parent_participant_id=self.participants[step.to],
            tool_call_ids=[self.tool_calls[key] for key in step.tools],
            report=step.report, outcome=step.outcome, at=self.at(step.at),
        )

    async def _user_memory(self, step: RememberUser) -> None:
        async with self.deps.sessions() as session, session.begin():
            await user_memories.put_user_memory(
                session, self.account_id, step.text,
                participant_id=self.participants[step.participant] if step.participant else None,
            )

    async def _skill(self, step: SetSkill) -> None:
        async with self.deps.sessions() as session, session.begin():
            await skills.put_skill_state(
                session, self.account_id, self.conversation_id, self.branches[step.branch],
                self.participants[step.participant], step.skill, state=step.state, active=step.active,
            )

    async def _checkpoint(self, step: Checkpoint) -> None:
        references = [memory_id_for(self.artifacts[key]) for key in step.references if key in self.artifacts]
        async with self.deps.sessions() as session, session.begin():
            await checkpoints.put_checkpoint(
                session, self.account_id, self.conversation_id, self.branches[step.branch],
                self.participants[step.participant], step.checkpoint_kind, state=step.state, references=references,
            )

    async def _lose_artifact(self, step: LoseArtifact) -> None:
        async with self.deps.sessions() as session:
            artifact = await tool_store.get_artifact(session, self.account_id, self.artifacts[step.tool])
        if artifact.storage_key is None:
            raise ValueError(f"artifact of {step.tool} is stored inline; run scenarios with inline_max_bytes=0")
        await self.deps.artifacts.delete(self.account_id, artifact.storage_key)

    def boundary(self, ask: Ask) -> GenerationBoundary:
        evidence = tuple(self._evidence(item) for item in ask.evidence)
        return GenerationBoundary(
            account_id=self.account_id,
            conversation_id=self.conversation_id,
            branch_id=self.branches[ask.branch],
            participant_id=self.participants[ask.participant],
            runtime_kind=ask.runtime,
            provider_route=ask.provider_route,
            token_budget=ask.token_budget,
            now=self.at(ask.at),
            evidence_requests=evidence,
        )

    def _evidence(self, item) -> EvidenceRequest:
        artifact_id = self.artifacts[item.tool]
        if item.rows:
            locator = Locator(artifact_id=artifact_id, kind="rows", start=item.rows[0], end=item.rows[1])
        elif item.lines:
            locator = Locator(artifact_id=artifact_id, kind="lines", start=item.lines[0], end=item.lines[1])
        elif item.pointer is not None:
            locator = Locator(artifact_id=artifact_id, kind="json_pointer", pointer=item.pointer)
        else:
            locator = None
        return EvidenceRequest(artifact_id=artifact_id, locator=locator, reason="scenario evidence request")

    def expand(self, fact: str, short) -> str:
        def one(match: re.Match) -> str:
            kind, key = match.groups()
            if kind == "a":
                return short(self.artifacts[key])
            if kind == "t":
                return short(self.tool_calls[key])
            return short(memory_id_for(self.artifacts[key]))

        return _TEMPLATE.sub(one, fact)


async def _legacy(
    deps: GraphDeps, account_id: str, participant_id: str, assembled: AssembledContext
) -> tuple[ChatMessage, ...]:
    """Full transcript replay of the same candidates, raw payloads included."""
    raw: dict[str, str] = {}
    async with deps.sessions() as session:
        for artifact in assembled.candidates.artifacts:
            try:
                payload = await read_artifact_payload(session, deps.artifacts, account_id, artifact.id)
                raw[artifact.id] = decode_payload(payload)
            except ArtifactStoreError as error:
                raw[artifact.id] = f"[raw payload unreadable: {type(error).__name__}]"
    participant = next(p for p in assembled.candidates.participants if p.id == participant_id)
    return tuple(legacy_messages(assembled.candidates, participant, raw))


async def run_scenario(scenario: Scenario, deps: GraphDeps) -> ScenarioOutcome:
    """Write ``scenario`` into a fresh account, assemble its ask, and score it.

    Args:
        scenario: the scenario.
        deps: graph dependencies; the scenario's tool specs are added to the catalog.

    Returns:
        The outcome, with the persisted assembly's id and the fact checks.
    """
    catalog = ToolCatalog(tools=(*scenario.tools, *deps.catalog.tools))
    deps = replace(deps, catalog=catalog)
    replay = _Replay(scenario, deps)
    await replay.open()
    for step in scenario.steps:
        await replay.step(step)
    boundary = replay.boundary(scenario.ask)
    # The measured call is a model run like a live turn's, so `dossier explain MODEL_RUN_ID` reads it.
    async with deps.sessions() as session, session.begin():
        participant = await conversations.get_participant(session, replay.account_id, boundary.participant_id)
        run = await messages.start_model_run(
            session, replay.account_id, replay.conversation_id, boundary.branch_id, boundary.participant_id,
            runtime_kind=boundary.runtime_kind, provider=participant.provider, model=participant.model,
        )
    boundary = boundary.model_copy(update={"model_run_id": run.id})
    await verify_provenance(deps, replay.account_id, replay.conversation_id, boundary.branch_id)
    assembled = await assemble_context(deps, boundary)
    legacy = await _legacy(deps, replay.account_id, boundary.participant_id, assembled)

    short = short_ids_for(assembled.candidates)
    required = tuple(replay.expand(fact, short) for fact in scenario.required)
    forbidden = tuple(replay.expand(fact, short) for fact in scenario.forbidden)
    text = context_text(assembled.result.messages)
    return ScenarioOutcome(
        name=scenario.name,
        account_id=replay.account_id,
        conversation_id=replay.conversation_id,
        assembly_id=assembled.assembly_id,
        model_run_id=run.id,
        boundary=boundary,
        record=assembled.result.record,
        decisions=assembled.result.decisions,
        messages=assembled.result.messages,
        legacy=legacy,
        required=required,
        forbidden=forbidden,
        required_missing=[fact for fact in required if fact not in text],
        forbidden_present=[fact for fact in forbidden if fact in text],
        timings=assembled.timings,
    )


async def reassemble(outcome: ScenarioOutcome, deps: GraphDeps) -> AssembledContext:
    """Assemble the same boundary again from the same graph snapshot (not linked to the measured run)."""
    boundary = outcome.boundary.model_copy(update={"model_run_id": None})
    return await assemble_context(deps, boundary, up_to_seq=outcome.record.snapshot_seq)
