"""Privacy taint on real Postgres and S3: derived records are never looser than what they were built from.

One test per defect class of issue 11 (2): a subagent's report, a tool call
whose arguments a model wrote after reading stricter data (``files.write``
among them, and the failed call that renders its arguments), a memory built
from several artifacts, an unknown tool, and the other derived records
(checkpoints, skill states, user memories, artifacts). Each is checked where
it is stored, through the same steps the live runtime takes.
"""

from __future__ import annotations

import random
import re
import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import pytest

from activities.context import assemble_context
from activities.deps import GraphDeps
from activities.ingest import (
    ToolOutcome,
    begin_tool_call,
    ingest_tool_result,
    object_recorder,
    record_attempt_failure,
)
from activities.promotion import promote_child_results
from activities.tools.base import ToolContext
from activities.tools.registry import default_registry
from dossier.runtime import SAMPLE_WORKSPACE
from harness.scenarios.runner import context_text
from sqlalchemy import text

from policy.enums import (
    PRIVACY_RANK,
    MessageRole,
    PrivacyClass,
    PromotionPolicy,
    RuntimeKind,
    ToolCallStatus,
    VisibilityScope,
)
from policy.records import GenerationBoundary, ToolMemoryRecord
from policy.tools import ToolCatalog, ToolSpec
from store import branches as branches_store
from store import checkpoints, conversations, messages, skills, tool_memories, user_memories
from store import tools as tool_store
from store.payloads import read_artifact_payload
from store.taint import TaintError, run_privacy
from store.writes import NewMessage, NewToolCall

pytestmark = pytest.mark.integration

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
CATALOG = ToolCatalog(tools=(
    *default_registry().catalog().tools,
    ToolSpec(name="gmail.read", result_kind="text", privacy=PrivacyClass.GOOGLE_DERIVED),
    ToolSpec(name="vault.peek", result_kind="text", privacy=PrivacyClass.SECRET_ADJACENT),
    ToolSpec(name="notes.read", result_kind="text", privacy=PrivacyClass.USER),
))


@dataclass(frozen=True)
class World:
    deps: GraphDeps
    account_id: str
    conversation_id: str
    branch_id: str
    assistant_id: str
    critic_id: str
    child_id: str

    async def tool(self, participant: str, name: str, result: bytes, *, arguments: dict | None = None,
                   model_run_id: str | None = None, kind: RuntimeKind = RuntimeKind.CHAT,
                   status: ToolCallStatus = ToolCallStatus.SUCCEEDED):
        call = await begin_tool_call(
            self.deps, self.account_id, self.conversation_id, NewToolCall(
                branch_id=self.branch_id, participant_id=participant, call_id=f"call-{uuid.uuid4().hex[:12]}",
                name=name, arguments=arguments or {"q": "x"}, runtime_kind=kind, model_run_id=model_run_id, at=T0),
        )
        ingested = await ingest_tool_result(
            self.deps, self.account_id, call.id,
            ToolOutcome(status=status, result=result, content_type="text/plain"), captured_at=T0,
        )
        return call, ingested

    async def run(self, participant: str, route: str = "local", kind: RuntimeKind = RuntimeKind.CHAT) -> str:
        """A model run with its assembled, persisted context (as the AgentTurn's first two activities)."""
        run_id = str(uuid.uuid4())
        async with self.deps.sessions() as session, session.begin():
            await messages.start_model_run(session, self.account_id, self.conversation_id, self.branch_id,
                                           participant, runtime_kind=kind, model_run_id=run_id)
        await assemble_context(self.deps, self.boundary(participant, route, runtime_kind=kind, model_run_id=run_id),
                               assembly_id=str(uuid.uuid4()))
        return run_id

    def boundary(self, participant: str, route: str, **extra) -> GenerationBoundary:
        fields = dict(account_id=self.account_id, conversation_id=self.conversation_id, branch_id=self.branch_id,
                      participant_id=participant, runtime_kind=RuntimeKind.CHAT, provider_route=route,
                      now=T0 + timedelta(minutes=1))
        return GenerationBoundary(**{**fields, **extra})


@pytest.fixture
async def world(graph_deps: GraphDeps) -> World:
    deps = replace(graph_deps, catalog=CATALOG)
    async with deps.sessions() as session, session.begin():
        account_id = await conversations.create_account(session, name="taint test")
        conversation = await conversations.create_conversation(session, account_id, title="taint")
        assistant = await conversations.add_participant(session, account_id, conversation.id, name="Assistant",
                                                        provider="scripted", model="m")
        critic = await conversations.add_participant(session, account_id, conversation.id, name="Critic",
                                                     provider="openai", model="m")
        child = await conversations.add_participant(session, account_id, conversation.id, name="Researcher",
                                                    role="subagent", parent_participant_id=assistant.id,
                                                    provider="scripted", model="m")
        await messages.append_message(session, account_id, conversation.id, NewMessage(
            branch_id=conversation.root_branch_id, role=MessageRole.USER, content="Summarise my inbox into a file."))
    return World(deps, account_id, conversation.id, conversation.root_branch_id, assistant.id, critic.id, child.id)


# --------------------------------------------------------------------------- subagent reports


async def test_a_subagent_report_carries_the_strictest_class_its_child_read(world: World) -> None:
    """Before: the promoted report was always ``user``, whatever the child read."""
    await world.tool(world.child_id, "gmail.read", b"From: boss@example.com\nSubject: layoffs",
                     kind=RuntimeKind.SUBAGENT_CHILD)
    run_id = await world.run(world.child_id, kind=RuntimeKind.SUBAGENT_CHILD)
    assert await _run_class(world, run_id) is PrivacyClass.GOOGLE_DERIVED
    promoted = await promote_child_results(
        world.deps, world.account_id, world.conversation_id, world.branch_id,
        child_participant_id=world.child_id, parent_participant_id=world.assistant_id,
        tool_call_ids=(), report="The boss wrote about layoffs.", outcome="succeeded", at=T0,
    )
    assert [m.privacy for m in promoted] == [PrivacyClass.GOOGLE_DERIVED]
    async with world.deps.sessions() as session:
        artifact = await tool_store.get_artifact(session, world.account_id, promoted[0].source_artifact_ids[0])
    assert artifact.privacy is PrivacyClass.GOOGLE_DERIVED


async def test_a_report_of_a_child_that_read_only_user_data_stays_user(world: World) -> None:
    await world.tool(world.child_id, "notes.read", b"grocery list", kind=RuntimeKind.SUBAGENT_CHILD)
    promoted = await promote_child_results(
        world.deps, world.account_id, world.conversation_id, world.branch_id,
        child_participant_id=world.child_id, parent_participant_id=world.assistant_id,
        tool_call_ids=(), report="Milk.", outcome="succeeded", at=T0,
    )
    assert promoted[0].privacy is PrivacyClass.USER


# --------------------------------------------------------------------------- tool calls and files


async def test_files_write_after_reading_gmail_is_google_derived_to_the_file(world: World) -> None:
    """Before: ``files.write`` kept its own ``user`` class though its arguments carried Gmail text."""
    await world.tool(world.assistant_id, "gmail.read", b"MARK-gmail-7781 quarterly numbers")
    run_id = await world.run(world.assistant_id)
    registry = default_registry()
    arguments = {"name": "inbox.md", "content": "MARK-gmail-7781 quarterly numbers"}
    call = await begin_tool_call(
        world.deps, world.account_id, world.conversation_id, NewToolCall(
            branch_id=world.branch_id, participant_id=world.assistant_id, call_id=f"{run_id}:w1", name="files.write",
            arguments=arguments, runtime_kind=RuntimeKind.CHAT, model_run_id=run_id, at=T0),
    )
    assert call.privacy is PrivacyClass.GOOGLE_DERIVED
    context = ToolContext(account_id=world.account_id, tool_call_id=call.id, attempt=1, workspace=SAMPLE_WORKSPACE,
                          artifacts=world.deps.artifacts, privacy=call.privacy,
                          record_object=object_recorder(world.deps, world.account_id, call.id))
    result = await registry.execute("files.write", context, arguments)
    ingested = await ingest_tool_result(
        world.deps, world.account_id, call.id,
        ToolOutcome(status=ToolCallStatus.SUCCEEDED, result=result.payload, content_type=result.content_type),
        captured_at=T0,
    )
    assert (ingested.artifact.privacy, ingested.memory.privacy) == (PrivacyClass.GOOGLE_DERIVED,) * 2
    handle_key = ingested.memory.payload["file"]["uri"].split("/", 3)[3]
    assert await world.deps.artifacts.privacy_of(world.account_id, handle_key) is PrivacyClass.GOOGLE_DERIVED


async def test_a_failed_calls_arguments_are_gated_by_what_its_model_read(world: World) -> None:
    """Before: a failed call rendered arguments copied from a secret result to any route."""
    await world.tool(world.assistant_id, "vault.peek", b"MARK-secret-4411 db password")
    run_id = await world.run(world.assistant_id)
    call = await begin_tool_call(
        world.deps, world.account_id, world.conversation_id, NewToolCall(
            branch_id=world.branch_id, participant_id=world.assistant_id, call_id=f"{run_id}:w2", name="files.write",
            arguments={"name": "x.md", "content": "MARK-secret-4411"}, runtime_kind=RuntimeKind.CHAT,
            model_run_id=run_id, at=T0),
    )
    assert call.privacy is PrivacyClass.SECRET_ADJACENT
    await record_attempt_failure(world.deps, world.account_id, call.id, attempt=1,
                                 error="ToolArgumentError: x.md cannot hold MARK-secret-4411", final=True)
    failed = await ingest_tool_result(
        world.deps, world.account_id, call.id,
        ToolOutcome(status=ToolCallStatus.FAILED, result=b"ToolArgumentError: x.md cannot hold MARK-secret-4411",
                    content_type="text/plain"), captured_at=T0, retry_critical=True,
    )
    assert failed.memory.privacy is PrivacyClass.SECRET_ADJACENT
    # The critic shares the branch (chat mode) through OpenAI, which may not receive secret-adjacent data.
    assembled = await assemble_context(world.deps, world.boundary(world.critic_id, "openai"))
    assert "MARK-secret-4411" not in context_text(assembled.result.messages)
    # The caller itself, on a route that may, still sees its own failure in full.
    own = await assemble_context(world.deps, world.boundary(world.assistant_id, "local"))
    assert "MARK-secret-4411" in context_text(own.result.messages)


async def test_a_run_that_read_only_public_data_keeps_its_tools_class(world: World) -> None:
    async with world.deps.sessions() as session, session.begin():
        other = await conversations.add_participant(session, world.account_id, world.conversation_id,
                                                    name="Public", provider="public-only", model="m")
    run_id = await world.run(other.id, route="public-only")
    assert await _run_class(world, run_id) is PrivacyClass.PUBLIC
    call = await begin_tool_call(
        world.deps, world.account_id, world.conversation_id, NewToolCall(
            branch_id=world.branch_id, participant_id=other.id, call_id=f"{run_id}:w3", name="files.write",
            arguments={"name": "a.md", "content": "hello"}, runtime_kind=RuntimeKind.CHAT, model_run_id=run_id, at=T0),
    )
    assert call.privacy is PrivacyClass.USER  # files.write's own class: the context added nothing


async def test_a_withheld_result_does_not_taint_the_next_call(world: World) -> None:
    """Only what the model was shown counts: a result its route withheld never reached it."""
    async with world.deps.sessions() as session, session.begin():
        other = await conversations.add_participant(session, world.account_id, world.conversation_id,
                                                    name="Scout", provider="openai", model="m")
    first = await world.run(other.id, route="openai")
    call, _ = await world.tool(other.id, "vault.peek", b"MARK-secret-9 token", model_run_id=first)
    async with world.deps.sessions() as session, session.begin():
        await messages.append_message(
            session, world.account_id, world.conversation_id, NewMessage(
                branch_id=world.branch_id, role=MessageRole.ASSISTANT, content="", author_participant_id=other.id,
                model_run_id=first,
                tool_calls=({"call_id": call.call_id, "name": call.name, "arguments": dict(call.arguments)},)),
        )
    second = await world.run(other.id, route="openai")
    # The call's own class (its arguments were shown) is secret-adjacent: vault.peek's class.
    assert await _run_class(world, second) is PrivacyClass.SECRET_ADJACENT
    third_view = await assemble_context(world.deps, world.boundary(other.id, "openai"))
    assert "MARK-secret-9" not in context_text(third_view.result.messages)


# --------------------------------------------------------------------------- memories


async def test_a_memory_from_several_artifacts_is_as_strict_as_the_strictest(world: World) -> None:
    """Before: a memory citing a user and a google_derived artifact could be stored as user."""
    _, notes = await world.tool(world.assistant_id, "notes.read", b"note")
    _, mail = await world.tool(world.assistant_id, "gmail.read", b"mail")
    combined = notes.memory.model_copy(update={
        "id": str(uuid.uuid4()), "source_artifact_ids": (notes.artifact.id, mail.artifact.id),
        "subject_key": "combined", "summary": "note and mail", "privacy": PrivacyClass.USER,
        "supersedes": (), "conflicts_with": (),
    })
    async with world.deps.sessions() as session, session.begin():
        stored = await tool_memories.insert_tool_memory(session, world.account_id, world.conversation_id, combined)
    assert stored.privacy is PrivacyClass.GOOGLE_DERIVED


async def test_a_promoted_copy_is_as_strict_as_the_memory_it_was_promoted_from(world: World) -> None:
    _, notes = await world.tool(world.assistant_id, "notes.read", b"note")
    _, secret = await world.tool(world.assistant_id, "vault.peek", b"key")
    copy = notes.memory.model_copy(update={"id": str(uuid.uuid4()), "promoted_from": (secret.memory.id,),
                                           "subject_key": "copy", "supersedes": (), "conflicts_with": ()})
    async with world.deps.sessions() as session, session.begin():
        stored = await tool_memories.insert_tool_memory(session, world.account_id, world.conversation_id, copy)
    assert stored.privacy is PrivacyClass.SECRET_ADJACENT


async def test_a_memory_citing_an_unknown_artifact_is_refused(world: World) -> None:
    _, notes = await world.tool(world.assistant_id, "notes.read", b"note")
    orphan: ToolMemoryRecord = notes.memory.model_copy(update={
        "id": str(uuid.uuid4()), "source_artifact_ids": ("no-such-artifact",), "subject_key": "orphan",
        "supersedes": (), "conflicts_with": ()})
    with pytest.raises(TaintError):
        async with world.deps.sessions() as session, session.begin():
            await tool_memories.insert_tool_memory(session, world.account_id, world.conversation_id, orphan)


# --------------------------------------------------------------------------- unknown tools


async def test_an_unknown_tool_fails_closed(world: World) -> None:
    """Before: a tool the catalog does not know was labelled ``user``."""
    call, ingested = await world.tool(world.assistant_id, "mystery.lookup", b"who knows")
    assert (call.privacy, ingested.artifact.privacy, ingested.memory.privacy) == (PrivacyClass.SECRET_ADJACENT,) * 3


async def test_an_override_may_not_loosen_a_known_tools_class(world: World) -> None:
    call = await begin_tool_call(
        world.deps, world.account_id, world.conversation_id, NewToolCall(
            branch_id=world.branch_id, participant_id=world.assistant_id, call_id=f"call-{uuid.uuid4().hex[:8]}",
            name="gmail.read", arguments={}, runtime_kind=RuntimeKind.CHAT, privacy=PrivacyClass.PUBLIC),
    )
    assert call.privacy is PrivacyClass.GOOGLE_DERIVED


# --------------------------------------------------------------------------- other derived records


async def test_an_artifact_is_never_looser_than_its_call(world: World) -> None:
    call = await begin_tool_call(
        world.deps, world.account_id, world.conversation_id, NewToolCall(
            branch_id=world.branch_id, participant_id=world.assistant_id, call_id=f"call-{uuid.uuid4().hex[:8]}",
            name="gmail.read", arguments={}, runtime_kind=RuntimeKind.CHAT),
    )
    from store.payloads import capture_artifact

    async with world.deps.sessions() as session, session.begin():
        artifact = await capture_artifact(session, world.deps.artifacts, world.account_id, call.id, b"x",
                                          content_type="text/plain", inline_max=0, privacy=PrivacyClass.PUBLIC)
    assert artifact.privacy is PrivacyClass.GOOGLE_DERIVED
    assert await world.deps.artifacts.privacy_of(world.account_id, artifact.storage_key) is \
        PrivacyClass.GOOGLE_DERIVED


async def test_checkpoints_skills_and_user_memories_take_their_sources_class(world: World) -> None:
    _, mail = await world.tool(world.assistant_id, "gmail.read", b"mail")
    run_id = await world.run(world.assistant_id)
    async with world.deps.sessions() as session, session.begin():
        checkpoint = await checkpoints.put_checkpoint(
            session, world.account_id, world.conversation_id, world.branch_id, world.assistant_id, "tool_loop",
            state={"next_step": "write"}, references=(mail.memory.id, run_id),
        )
        unknown = await checkpoints.put_checkpoint(
            session, world.account_id, world.conversation_id, world.branch_id, world.assistant_id,
            "parent_resume", state={}, references=("not-a-record",),
        )
        skill = await skills.put_skill_state(
            session, world.account_id, world.conversation_id, world.branch_id, world.assistant_id, "inbox",
            state={"last": "mail"}, derived_from=(mail.artifact.id,), visibility=VisibilityScope.PARTICIPANT_PRIVATE,
        )
        fact = await user_memories.put_user_memory(session, world.account_id, "writes to the boss weekly",
                                                   derived_from=(mail.memory.id,))
        plain = await user_memories.put_user_memory(session, world.account_id, "prefers EUR")
    assert checkpoint.privacy is PrivacyClass.GOOGLE_DERIVED
    assert unknown.privacy is PrivacyClass.SECRET_ADJACENT  # an unresolvable reference fails closed
    assert (skill.privacy, fact.privacy, plain.privacy) == (
        PrivacyClass.GOOGLE_DERIVED, PrivacyClass.GOOGLE_DERIVED, PrivacyClass.USER)


async def _run_class(world: World, run_id: str) -> PrivacyClass | None:
    async with world.deps.sessions() as session:
        return await run_privacy(session, world.account_id, run_id)


# --------------------------------------------------------------------------- property, through the store

MARK = re.compile(r"MRK\d{5}Z")
TOOL_CLASSES = {"web.search": PrivacyClass.PUBLIC, "notes.read": PrivacyClass.USER,
                "gmail.read": PrivacyClass.GOOGLE_DERIVED, "vault.peek": PrivacyClass.SECRET_ADJACENT}
ROUTE_OF = {"scripted": "local", "openai": "openai", "public-only": "public-only"}


@pytest.mark.parametrize("seed", range(12))
async def test_generated_graphs_keep_taint_through_the_store(graph_deps: GraphDeps, seed: int) -> None:
    """Property, on real Postgres and S3: models that copy everything they were shown into what they write.

    Participants on several routes and a subagent child make tool calls of every class (and of an undeclared
    tool) on forked branches; each call is made by a model run whose persisted assembly the store reads; some
    fail, some write files; memories are combined with a looser declared class; the child's report is promoted;
    checkpoints, skill states and user memories are built from records. Then (a) no context assembled for a
    participant holds a marker its route may not receive, and (b) no stored record is looser than a marker it holds.
    """
    rng = random.Random(seed)
    deps = replace(graph_deps, catalog=CATALOG)
    origin: dict[str, PrivacyClass] = {}

    def marker(privacy: PrivacyClass) -> str:
        mark = f"MRK{len(origin) + 1:05d}Z"
        origin[mark] = privacy
        return mark

    async with deps.sessions() as session, session.begin():
        account = await conversations.create_account(session, name=f"taint property {seed}")
        conversation = await conversations.create_conversation(session, account, title="p")
        people = [await conversations.add_participant(session, account, conversation.id, name=f"A{i}",
                                                      provider=provider, model="m")
                  for i, provider in enumerate(rng.sample(sorted(ROUTE_OF), k=rng.randint(1, 3)))]
        child = await conversations.add_participant(session, account, conversation.id, name="Kid", role="subagent",
                                                    parent_participant_id=people[0].id, provider="scripted",
                                                    model="m")
        opening = await messages.append_message(session, account, conversation.id, NewMessage(
            branch_id=conversation.root_branch_id, role=MessageRole.USER, content=f"start {marker(PrivacyClass.USER)}"))
    branches = [conversation.root_branch_id]
    last_message = {conversation.root_branch_id: opening.id}
    memory_ids: list[str] = []
    everyone = [*people, child]

    def route(participant) -> str:
        return ROUTE_OF[participant.provider]

    def kind_of(participant) -> RuntimeKind:
        return RuntimeKind.SUBAGENT_CHILD if participant.id == child.id else RuntimeKind.CHAT

    async def view(participant, branch: str) -> set[str]:
        boundary = GenerationBoundary(account_id=account, conversation_id=conversation.id, branch_id=branch,
                                      participant_id=participant.id, runtime_kind=kind_of(participant),
                                      provider_route=route(participant), now=T0 + timedelta(minutes=1))
        assembled = await assemble_context(deps, boundary)
        seen = set(MARK.findall(context_text(assembled.result.messages)))
        allowed = deps.policy.route(route(participant)).allowed
        leaked = sorted(m for m in seen if origin[m] not in allowed)
        assert not leaked, f"(a) {participant.name} on {route(participant)} was shown {leaked}"
        return seen

    for step in range(rng.randint(4, 9)):
        who = rng.choice(everyone)
        branch = rng.choice(branches)
        action = rng.choice(["tool", "tool", "tool", "fork", "say", "combine"])
        if action == "fork":
            if branch in last_message:
                async with deps.sessions() as session, session.begin():
                    fork = await branches_store.fork_branch(session, account, conversation.id, branch,
                                                            last_message[branch])
                branches.append(fork.id)
            continue
        if action == "say":
            async with deps.sessions() as session, session.begin():
                said = await messages.append_message(session, account, conversation.id, NewMessage(
                    branch_id=branch, role=MessageRole.USER, content=f"also {marker(PrivacyClass.USER)}"))
            last_message[branch] = said.id
            continue
        if action == "combine" and len(memory_ids) >= 2:
            picks = rng.sample(memory_ids, k=2)
            async with deps.sessions() as session, session.begin():
                sources = [await tool_memories.get_tool_memory(session, account, m) for m in picks]
                combined = sources[0].model_copy(update={
                    "id": str(uuid.uuid4()), "subject_key": f"combined:{uuid.uuid4()}",
                    "source_artifact_ids": tuple(a for s in sources for a in s.source_artifact_ids),
                    "summary": " + ".join(s.summary for s in sources), "privacy": PrivacyClass.PUBLIC,
                    "supersedes": (), "conflicts_with": (), "promoted_from": ()})
                stored = await tool_memories.insert_tool_memory(session, account, conversation.id, combined)
            memory_ids.append(stored.id)
            continue
        # A model run: assemble (persisted, linked to the run), copy every marker it was shown into a call.
        run_id = str(uuid.uuid4())
        async with deps.sessions() as session, session.begin():
            await messages.start_model_run(session, account, conversation.id, branch, who.id,
                                           runtime_kind=kind_of(who), model_run_id=run_id)
        boundary = GenerationBoundary(account_id=account, conversation_id=conversation.id, branch_id=branch,
                                      participant_id=who.id, runtime_kind=kind_of(who), provider_route=route(who),
                                      now=T0 + timedelta(minutes=1), model_run_id=run_id)
        assembled = await assemble_context(deps, boundary, assembly_id=str(uuid.uuid4()))
        seen = set(MARK.findall(context_text(assembled.result.messages)))
        assert not [m for m in seen if origin[m] not in deps.policy.route(route(who)).allowed]
        copied = " ".join(sorted(seen))
        name = rng.choice([*TOOL_CLASSES, "files.write", "mystery.lookup"])
        fails = rng.random() < 0.25
        arguments = {"name": f"f{step}.md", "content": copied or "empty"} if name == "files.write" else {"q": copied}
        call = await begin_tool_call(deps, account, conversation.id, NewToolCall(
            branch_id=branch, participant_id=who.id, call_id=f"{run_id}:c", name=name, arguments=arguments,
            runtime_kind=kind_of(who), model_run_id=run_id, at=T0))
        request = {"call_id": call.call_id, "name": call.name, "arguments": arguments}
        async with deps.sessions() as session, session.begin():
            # The model's own words repeat everything too: other participants read them by their class.
            await messages.append_message(
                session, account, conversation.id, NewMessage(
                    branch_id=branch, role=MessageRole.ASSISTANT, content=f"noted {copied}",
                    author_participant_id=who.id, model_run_id=run_id, tool_calls=(request,),
                    visibility=VisibilityScope.PARTICIPANT_PRIVATE if who.id == child.id else VisibilityScope.BRANCH))
        if fails:
            outcome = ToolOutcome(status=ToolCallStatus.FAILED, result=f"ValueError: bad {copied}".encode(),
                                  content_type="text/plain")
            await record_attempt_failure(deps, account, call.id, attempt=1, error=f"ValueError: bad {copied}",
                                         final=True)
        elif name == "files.write":
            context = ToolContext(account_id=account, tool_call_id=call.id, attempt=1,
                                  workspace=SAMPLE_WORKSPACE, artifacts=deps.artifacts, privacy=call.privacy,
                                  record_object=object_recorder(deps, account, call.id))
            result = await default_registry().execute("files.write", context, arguments)
            outcome = ToolOutcome(status=ToolCallStatus.SUCCEEDED, result=result.payload,
                                  content_type=result.content_type)
        else:
            data_class = TOOL_CLASSES.get(name, rng.choice(list(PrivacyClass)))
            outcome = ToolOutcome(status=ToolCallStatus.SUCCEEDED, content_type="text/plain",
                                  result=f"result {marker(data_class)} about {copied}".encode())
        ingested = await ingest_tool_result(deps, account, call.id, outcome, captured_at=T0,
                                            promotion=PromotionPolicy.ON_COMPLETION if who.id == child.id
                                            else PromotionPolicy.NONE)
        memory_ids.append(ingested.memory.id)

    # The child's report, written from everything it was last shown; a checkpoint, skill and fact from memories.
    seen = await view(child, conversation.root_branch_id)
    promoted = await promote_child_results(
        deps, account, conversation.id, conversation.root_branch_id, child_participant_id=child.id,
        parent_participant_id=people[0].id, tool_call_ids=(), report=f"report {' '.join(sorted(seen))}",
        outcome="succeeded", at=T0)
    memory_ids += [m.id for m in promoted]
    picks = rng.sample(memory_ids, k=min(2, len(memory_ids)))
    async with deps.sessions() as session, session.begin():
        texts = " ".join([(await tool_memories.get_tool_memory(session, account, m)).summary for m in picks])
        await checkpoints.put_checkpoint(session, account, conversation.id, conversation.root_branch_id,
                                         people[0].id, "tool_loop", state={"notes": texts}, references=picks)
        await skills.put_skill_state(session, account, conversation.id, conversation.root_branch_id, people[0].id,
                                     "digest", state={"notes": texts}, derived_from=picks)
        await user_memories.put_user_memory(session, account, f"likes {texts}", derived_from=picks)

    for participant in everyone:
        for branch in branches:
            await view(participant, branch)
    # (b): every stored record is at least as strict as every marker it holds.
    async with deps.sessions() as session:
        for table in ("messages", "tool_calls", "tool_artifacts", "tool_memories", "continuation_checkpoints",
                      "skill_states", "user_memories"):
            rows = await session.execute(text(f"SELECT id, privacy, row_to_json(t)::text AS body FROM {table} t "
                                              "WHERE account_id = :a"), {"a": account})
            for row in rows:
                body = row.body
                if table == "tool_artifacts":
                    body += (await read_artifact_payload(session, deps.artifacts, account, row.id)).decode()
                for mark in set(MARK.findall(body)):
                    assert PRIVACY_RANK[origin[mark]] <= PRIVACY_RANK[PrivacyClass(row.privacy)], (
                        f"(b) {table} {row.id} is {row.privacy} but holds {mark} of {origin[mark].value} data")


# --------------------------------------------------------------------------- a model's own words


async def test_a_models_answer_is_as_strict_as_what_its_run_was_shown(world: World) -> None:
    """Before: every transcript message was user data, so an answer repeating a secret result reached a
    participant on a route that may not receive it."""
    await world.tool(world.assistant_id, "vault.peek", b"MARK-secret-77 db password")
    run_id = await world.run(world.assistant_id)
    async with world.deps.sessions() as session, session.begin():
        answer = await messages.append_message(
            session, world.account_id, world.conversation_id, NewMessage(
                branch_id=world.branch_id, role=MessageRole.ASSISTANT,
                content="The database password is MARK-secret-77.", author_participant_id=world.assistant_id,
                model_run_id=run_id))
        typed = await messages.append_message(session, world.account_id, world.conversation_id, NewMessage(
            branch_id=world.branch_id, role=MessageRole.USER, content="Thanks. Critic, anything to add?"))
    assert (answer.privacy, typed.privacy) == (PrivacyClass.SECRET_ADJACENT, PrivacyClass.USER)

    # The critic works through OpenAI, which may not receive secret-adjacent data: the answer is withheld,
    # the user's own words are not.
    critic = await assemble_context(world.deps, world.boundary(world.critic_id, "openai"))
    seen = context_text(critic.result.messages)
    assert "MARK-secret-77" not in seen and "Critic, anything to add?" in seen
    assert any(d.subject_ref == f"message:{answer.id}" and d.omission is not None for d in critic.result.decisions)
    # Its author, on a route that may, reads it; so does a participant on such a route, whose own output is then
    # as strict (the taint follows the words).
    own = await assemble_context(world.deps, world.boundary(world.assistant_id, "local"))
    assert "MARK-secret-77" in context_text(own.result.messages)
    async with world.deps.sessions() as session, session.begin():
        local_critic = await conversations.add_participant(session, world.account_id, world.conversation_id,
                                                           name="Local critic", provider="scripted", model="m")
    reader = await world.run(local_critic.id)
    assert await _run_class(world, reader) is PrivacyClass.SECRET_ADJACENT
