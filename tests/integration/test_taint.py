"""Privacy taint on real Postgres and S3: derived records are never looser than what they were built from.

One test per defect class of issue 11 (2): a subagent's report, a tool call
whose arguments a model wrote after reading stricter data (``files.write``
among them, and the failed call that renders its arguments), a memory built
from several artifacts, an unknown tool, and the other derived records
(checkpoints, skill states, user memories, artifacts). Each is checked where
it is stored, through the same steps the live runtime takes.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import pytest

from activities.context import assemble_context
from activities.deps import GraphDeps
from activities.ingest import ToolOutcome, begin_tool_call, ingest_tool_result, record_attempt_failure
from activities.promotion import promote_child_results
from activities.tools.base import ToolContext
from activities.tools.registry import default_registry
from dossier.runtime import SAMPLE_WORKSPACE
from harness.scenarios.runner import context_text
from policy.enums import MessageRole, PrivacyClass, RuntimeKind, ToolCallStatus, VisibilityScope
from policy.records import GenerationBoundary, ToolMemoryRecord
from policy.tools import ToolCatalog, ToolSpec
from store import checkpoints, conversations, messages, skills, tool_memories, user_memories
from store import tools as tool_store
from store.taint import TaintError, run_privacy

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
            self.deps, self.account_id, self.conversation_id, self.branch_id, participant,
            call_id=f"call-{uuid.uuid4().hex[:12]}", name=name, arguments=arguments or {"q": "x"},
            runtime_kind=kind, model_run_id=model_run_id, at=T0,
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
        await messages.append_message(session, account_id, conversation.id, conversation.root_branch_id,
                                      role=MessageRole.USER, content="Summarise my inbox into a file.")
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
        world.deps, world.account_id, world.conversation_id, world.branch_id, world.assistant_id,
        call_id=f"{run_id}:w1", name="files.write", arguments=arguments, runtime_kind=RuntimeKind.CHAT,
        model_run_id=run_id, at=T0,
    )
    assert call.privacy is PrivacyClass.GOOGLE_DERIVED
    context = ToolContext(account_id=world.account_id, tool_call_id=call.id, attempt=1, workspace=SAMPLE_WORKSPACE,
                          artifacts=world.deps.artifacts, privacy=call.privacy)
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
        world.deps, world.account_id, world.conversation_id, world.branch_id, world.assistant_id,
        call_id=f"{run_id}:w2", name="files.write", arguments={"name": "x.md", "content": "MARK-secret-4411"},
        runtime_kind=RuntimeKind.CHAT, model_run_id=run_id, at=T0,
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
        world.deps, world.account_id, world.conversation_id, world.branch_id, other.id,
        call_id=f"{run_id}:w3", name="files.write", arguments={"name": "a.md", "content": "hello"},
        runtime_kind=RuntimeKind.CHAT, model_run_id=run_id, at=T0,
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
            session, world.account_id, world.conversation_id, world.branch_id, role=MessageRole.ASSISTANT,
            content="", author_participant_id=other.id, model_run_id=first,
            tool_calls=({"call_id": call.call_id, "name": call.name, "arguments": dict(call.arguments)},),
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
        world.deps, world.account_id, world.conversation_id, world.branch_id, world.assistant_id,
        call_id=f"call-{uuid.uuid4().hex[:8]}", name="gmail.read", arguments={}, runtime_kind=RuntimeKind.CHAT,
        privacy=PrivacyClass.PUBLIC,
    )
    assert call.privacy is PrivacyClass.GOOGLE_DERIVED


# --------------------------------------------------------------------------- other derived records


async def test_an_artifact_is_never_looser_than_its_call(world: World) -> None:
    call = await begin_tool_call(
        world.deps, world.account_id, world.conversation_id, world.branch_id, world.assistant_id,
        call_id=f"call-{uuid.uuid4().hex[:8]}", name="gmail.read", arguments={}, runtime_kind=RuntimeKind.CHAT,
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
            {"next_step": "write"}, references=(mail.memory.id, run_id),
        )
        unknown = await checkpoints.put_checkpoint(
            session, world.account_id, world.conversation_id, world.branch_id, world.assistant_id,
            "parent_resume", {}, references=("not-a-record",),
        )
        skill = await skills.put_skill_state(
            session, world.account_id, world.conversation_id, world.branch_id, world.assistant_id, "inbox",
            {"last": "mail"}, derived_from=(mail.artifact.id,), visibility=VisibilityScope.PARTICIPANT_PRIVATE,
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
