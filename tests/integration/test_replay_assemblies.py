"""Stored assemblies recompute byte-identically from stored state, however far the graph has moved on.

The seed scenarios and a real multi-step turn through Temporal are assembled,
then the graph moves on the ways a live conversation does (more turns and
messages, a new user memory, every skill state rewritten, memory resolutions
changed, memories superseded, artifacts added), and every stored assembly is
recomputed (:func:`activities.replay.recompute_assembly`) under the policy its
tag names: the provider messages must be byte-identical, and recomputing must
write nothing. The refusals are checked too: an unknown policy tag, another
account's assembly, an assembly without replay inputs, a forgotten user memory.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import delete, func, select, update

from activities.context import assemble_context
from activities.deps import GraphDeps
from activities.ingest import ToolOutcome, begin_tool_call, ingest_tool_result, record_attempt_failure
from activities.replay import recompute_assembly
from contracts import Scope
from dossier.client import DossierClient
from harness.scenarios import all_scenarios
from harness.scenarios.runner import run_scenario
from policy.enums import MessageRole, ResolutionStatus, RuntimeKind, ToolCallStatus
from policy.errors import UnknownPolicyVersionError
from policy.policy import DEFAULT_POLICY, ContextPolicy
from policy.records import CandidateSet, GenerationBoundary, canonical_json
from policy.rehydration import RAW_MISSING_TEXT
from policy.tools import ToolCatalog, ToolSpec
from policy.versions import LEAN_POLICY
from store import branches, conversations, messages, skills, user_memories
from store import tools as tool_store
from store.assemblies import get_context_assembly, list_context_assemblies
from store.candidates import CandidateLimits, load_candidates
from store.errors import AssemblyNotReplayableError, NotFoundError
from store.models import ContextAssembly, PolicyDecision, ToolMemory
from store.payloads import read_artifact_payload
from store.tool_memories import mark_memory_resolution
from store.writes import NewMessage, NewToolCall

SCENARIOS = all_scenarios()
QUESTION = "Which region drove Q3 2026 revenue? Write me a short report."
LATE_USER_MEMORY = "The user now wants every answer in French."


async def _row_counts(deps: GraphDeps) -> tuple[int, int]:
    async with deps.sessions() as session:
        assemblies = await session.scalar(select(func.count()).select_from(ContextAssembly))
        decisions = await session.scalar(select(func.count()).select_from(PolicyDecision))
    return assemblies or 0, decisions or 0


async def _move_on(deps: GraphDeps, account_id: str, conversation_id: str, branch_id: str) -> None:
    """What a live conversation does after an assembly: every kind of write replay must see past."""
    async with deps.sessions() as session, session.begin():
        await user_memories.put_user_memory(session, account_id, LATE_USER_MEMORY)
        now = await load_candidates(session, account_id, conversation_id, branch_id, deps.limits)
        for state in now.skill_states:
            await skills.put_skill_state(session, account_id, conversation_id, state.branch_id, state.participant_id,
                                         state.skill, state={**state.state, "rewritten": "after the snapshot"},
                                         active=not state.active, visibility=state.visibility)
        for memory in now.tool_memories:
            flipped = (ResolutionStatus.MISSING_SOURCE if memory.resolution is ResolutionStatus.RESOLVED
                       else ResolutionStatus.RESOLVED)
            await mark_memory_resolution(session, account_id, memory.id, flipped)
        # Open and failed calls resolved, succeeded ones failing on a retry: the pinned pools change.
        for call in now.tool_calls:
            if call.status is ToolCallStatus.SUCCEEDED:
                await tool_store.update_tool_call(session, account_id, call.id, status=ToolCallStatus.FAILED,
                                                  error="failed when run again")
            else:
                await tool_store.update_tool_call(session, account_id, call.id, status=ToolCallStatus.SUCCEEDED)
        await messages.append_message(session, account_id, conversation_id, NewMessage(
            branch_id=branch_id, role=MessageRole.USER, content="And what about Q4?"))


async def _recompute_all(deps: GraphDeps, account_id: str, assembly_ids: list[str]) -> None:
    before = await _row_counts(deps)
    for assembly_id in assembly_ids:
        again = await recompute_assembly(deps, account_id, assembly_id)
        assert again.policy is DEFAULT_POLICY
        assert canonical_json(list(again.messages)) == canonical_json(list(again.stored.messages or ()))
        assert again.identical, assembly_id
        assert again.result.record.content_sha256 == again.stored.record.content_sha256
    assert await _row_counts(deps) == before, "recomputing wrote rows"


# --------------------------------------------------------------------------- the seed scenarios


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
async def test_a_scenario_assembly_recomputes_identically_after_the_graph_moved_on(scenario, graph_deps) -> None:
    outcome = await run_scenario(scenario, graph_deps)
    deps = graph_deps
    boundary = outcome.boundary
    at_first = await recompute_assembly(deps, outcome.account_id, outcome.assembly_id)
    await _move_on(deps, outcome.account_id, outcome.conversation_id, boundary.branch_id)
    # The same participant's next call, after all that: it continues the first one's epoch.
    later = await assemble_context(deps, boundary.model_copy(update={"now": boundary.now + timedelta(minutes=5)}))
    assert later.result.messages != outcome.messages, "the graph did not move on in a way the context shows"

    await _recompute_all(deps, outcome.account_id, [outcome.assembly_id, later.assembly_id])
    # Not only the messages: the candidates read back are those read before the graph moved on.
    after = await recompute_assembly(deps, outcome.account_id, outcome.assembly_id)
    assert after.candidates == at_first.candidates
    async with deps.sessions() as session:
        stored = await get_context_assembly(session, outcome.account_id, later.assembly_id)
    assert stored.replay is not None and stored.replay.previous_assembly_id == outcome.assembly_id


async def test_moving_on_changes_what_the_current_graph_gives(graph_deps) -> None:
    """The writes of ``_move_on`` are visible to a load of the current graph: replay has something to ignore."""
    scenario = next(s for s in SCENARIOS if any(step.kind == "skill" for step in s.steps))
    outcome = await run_scenario(scenario, graph_deps)
    boundary = outcome.boundary
    async with graph_deps.sessions() as session:
        before = await load_candidates(session, outcome.account_id, outcome.conversation_id, boundary.branch_id)
    await _move_on(graph_deps, outcome.account_id, outcome.conversation_id, boundary.branch_id)
    async with graph_deps.sessions() as session:
        now = await load_candidates(session, outcome.account_id, outcome.conversation_id, boundary.branch_id)
        at_snapshot = await load_candidates(session, outcome.account_id, outcome.conversation_id,
                                            boundary.branch_id, up_to_seq=outcome.record.snapshot_seq,
                                            user_memory_seq=before_user_seq(before))
    assert LATE_USER_MEMORY in [m.text for m in now.user_memories]
    assert now.skill_states != before.skill_states and now.tool_memories != before.tool_memories
    assert at_snapshot.model_dump() == before.model_dump()


async def test_pinned_pools_at_their_limits_replay_as_they_were(graph_deps) -> None:
    """Pools of one pinned call: which calls were loaded and how many were counted past the limit."""
    deps = replace(graph_deps, limits=CandidateLimits(max_tool_calls=1, max_pinned_tool_calls=1,
                                                      max_open_tool_calls=1))
    async with deps.sessions() as session, session.begin():
        account_id = await conversations.create_account(session, name="replay at the limits")
        conversation = await conversations.create_conversation(session, account_id, title="t")
        assistant = await conversations.add_participant(session, account_id, conversation.id, name="Assistant",
                                                        provider="scripted", model="m")
        await messages.append_message(session, account_id, conversation.id, NewMessage(
            branch_id=conversation.root_branch_id, role=MessageRole.USER, content="Deploy it."))
    at = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    for n in range(3):
        call = await begin_tool_call(deps, account_id, conversation.id, NewToolCall(
            branch_id=conversation.root_branch_id, participant_id=assistant.id, call_id=f"call_deploy_{n}",
            name="deploy.run", arguments={"attempt": n}, runtime_kind=RuntimeKind.CHAT, at=at))
        await record_attempt_failure(deps, account_id, call.id, attempt=1, error=f"deploy {n} failed", final=True,
                                     at=at)
        await begin_tool_call(deps, account_id, conversation.id, NewToolCall(
            branch_id=conversation.root_branch_id, participant_id=assistant.id, call_id=f"call_wait_{n}",
            name="approval.wait", arguments={"n": n}, runtime_kind=RuntimeKind.CHAT, at=at))
    boundary = GenerationBoundary(account_id=account_id, conversation_id=conversation.id,
                                  branch_id=conversation.root_branch_id, participant_id=assistant.id,
                                  runtime_kind=RuntimeKind.CHAT, provider_route="local",
                                  now=at + timedelta(minutes=5))
    first = await assemble_context(deps, boundary)
    assert (first.candidates.unloaded_failed_calls, first.candidates.unloaded_open_calls) == (2, 2)
    await _move_on(deps, account_id, conversation.id, conversation.root_branch_id)
    after = await recompute_assembly(graph_deps, account_id, first.assembly_id)
    assert after.identical and after.candidates == first.candidates


def before_user_seq(candidates) -> int:
    return max((m.seq for m in candidates.user_memories), default=0)


# --------------------------------------------------------------------------- refusals


async def test_refusals(graph_deps) -> None:
    outcome = await run_scenario(SCENARIOS[0], graph_deps)

    # Another account's assembly reads as one that does not exist.
    async with graph_deps.sessions() as session, session.begin():
        stranger = await conversations.create_account(session, name="stranger")
    with pytest.raises(NotFoundError):
        await recompute_assembly(graph_deps, stranger, outcome.assembly_id)
    with pytest.raises(NotFoundError):
        await recompute_assembly(graph_deps, outcome.account_id, "no-such-assembly")

    # An assembly made under a policy the registry does not hold: a typed error, never today's default.
    custom = replace(graph_deps, policy=ContextPolicy(version="custom/1", message_window=2))
    unregistered = await assemble_context(custom, outcome.boundary)
    with pytest.raises(UnknownPolicyVersionError, match="custom/1"):
        await recompute_assembly(graph_deps, outcome.account_id, unregistered.assembly_id)
    # ... which a what-if may still recompute under a policy it names.
    what_if = await recompute_assembly(graph_deps, outcome.account_id, unregistered.assembly_id,
                                       policy=custom.policy)
    assert what_if.identical and what_if.policy is custom.policy
    lean = await recompute_assembly(graph_deps, outcome.account_id, outcome.assembly_id, policy=LEAN_POLICY)
    assert lean.policy is LEAN_POLICY and lean.result.record.policy_version == LEAN_POLICY.version_tag

    # A user memory the assembly loaded and the user has since forgotten: no longer replayable, said so.
    async with graph_deps.sessions() as session, session.begin():
        memory = await user_memories.put_user_memory(session, outcome.account_id, "The user is called Ada.")
    remembered = await assemble_context(graph_deps, outcome.boundary)
    assert "The user is called Ada." in canonical_json(remembered.result.to_openai())
    assert (await recompute_assembly(graph_deps, outcome.account_id, remembered.assembly_id)).identical
    async with graph_deps.sessions() as session, session.begin():
        assert await user_memories.forget_user_memory(session, outcome.account_id, memory.id)
    with pytest.raises(AssemblyNotReplayableError, match=memory.id):
        await recompute_assembly(graph_deps, outcome.account_id, remembered.assembly_id)
    # The assembly made before it was remembered never loaded it: still replayable.
    assert (await recompute_assembly(graph_deps, outcome.account_id, outcome.assembly_id)).identical

    # An assembly stored before replay inputs were (the columns of migration 0008 NULL).
    fresh = await assemble_context(graph_deps, outcome.boundary)
    async with graph_deps.sessions() as session, session.begin():
        await session.execute(update(ContextAssembly).where(ContextAssembly.id == fresh.assembly_id)
                              .values(user_memory_seq=None, candidate_limits=None))
    with pytest.raises(AssemblyNotReplayableError, match="before assemblies kept their replay inputs"):
        await recompute_assembly(graph_deps, outcome.account_id, fresh.assembly_id)

    # An assembly another assembler version rendered: refused by name (a what-if may still recompute it).
    older = await assemble_context(graph_deps, outcome.boundary)
    async with graph_deps.sessions() as session, session.begin():
        await session.execute(update(ContextAssembly).where(ContextAssembly.id == older.assembly_id)
                              .values(assembler_version="dossier-assembler/3"))
    with pytest.raises(AssemblyNotReplayableError, match="assembled by dossier-assembler/3 and this runtime"):
        await recompute_assembly(graph_deps, outcome.account_id, older.assembly_id)
    assert (await recompute_assembly(graph_deps, outcome.account_id, older.assembly_id, policy=DEFAULT_POLICY)).identical


# --------------------------------------------------------------------------- a real multi-step turn through Temporal


async def _assembly_ids(client: DossierClient, conversation_id: str) -> list[str]:
    async with client.deps.sessions() as session:
        stored = await list_context_assemblies(session, client.account_id, conversation_id=conversation_id,
                                               limit=1000)
    return [assembly.id for assembly in stored]


async def _call_again(deps: GraphDeps, account_id: str, tool_call_id: str, call_id: str) -> None:
    """The participant runs one of its calls again, through the capture path a turn uses: a new call,
    artifact and memory, which supersedes the memory of the same subject it had."""
    async with deps.sessions() as session:
        call = await tool_store.get_tool_call(session, account_id, tool_call_id)
        artifact = await tool_store.get_artifact_for_tool_call(session, account_id, tool_call_id)
        raw = await read_artifact_payload(session, deps.artifacts, account_id, artifact.id)
        branch = await branches.get_branch(session, account_id, call.branch_id)
    again = await begin_tool_call(deps, account_id, branch.conversation_id, NewToolCall(
        branch_id=call.branch_id, participant_id=call.participant_id, call_id=call_id, name=call.name,
        arguments=call.arguments, runtime_kind=call.runtime_kind, at=artifact.captured_at + timedelta(hours=1)))
    await ingest_tool_result(deps, account_id, again.id, ToolOutcome(status=ToolCallStatus.SUCCEEDED, result=raw,
                                                                      content_type=artifact.content_type),
                             captured_at=artifact.captured_at + timedelta(hours=1))


async def test_a_multi_step_turn_recomputes_identically_after_more_turns(dossier: DossierClient) -> None:
    account = dossier.account_id
    conversation_id, branch_id = await dossier.new_conversation("replay")
    scope = Scope(account_id=account, conversation_id=conversation_id, branch_id=branch_id)
    participant = await dossier.participant(scope, "scripted:analyst")
    async with dossier.deps.sessions() as session, session.begin():
        await user_memories.put_user_memory(session, account, "The user reports in euros.")
        await skills.put_skill_state(session, account, conversation_id, branch_id, participant, "report",
                                     state={"step": "gather"})

    first = await dossier.chat(QUESTION, conversation_id=conversation_id)
    assert first.result.status == "answered" and len(first.result.model_run_ids) >= 4
    first_ids = await _assembly_ids(dossier, conversation_id)
    assert len(first_ids) == len(first.result.model_run_ids)

    # The graph moves on: a new user memory, the skill state rewritten, the same question twice more (new
    # tool calls, artifacts and memories superseding the first turn's), memory resolutions changed.
    async with dossier.deps.sessions() as session, session.begin():
        await user_memories.put_user_memory(session, account, LATE_USER_MEMORY)
        await skills.put_skill_state(session, account, conversation_id, branch_id, participant, "report",
                                     state={"step": "write"})
    await _call_again(dossier.deps, account, first.result.tool_call_ids[1], "rerun-1")
    second = await dossier.chat(QUESTION, conversation_id=conversation_id)
    await _call_again(dossier.deps, account, first.result.tool_call_ids[1], "rerun-2")
    await _move_on(dossier.deps, account, conversation_id, branch_id)
    third = await dossier.chat(QUESTION, conversation_id=conversation_id)
    assert second.result.status == third.result.status == "answered"
    async with dossier.deps.sessions() as session:
        now = await load_candidates(session, account, conversation_id, branch_id)
    assert any(memory.superseded_by for memory in now.tool_memories), "no memory was superseded"
    latest = await recompute_assembly(dossier.deps, account, (await _assembly_ids(dossier, conversation_id))[0])
    assert LATE_USER_MEMORY in canonical_json(list(latest.messages)), "the late user memory reaches later calls"

    every = await _assembly_ids(dossier, conversation_id)
    assert set(first_ids) < set(every)
    await _recompute_all(dossier.deps, account, every)


async def test_what_replay_cannot_bring_back_is_reported(graph_deps) -> None:
    """Deleted raw bytes and a deleted previous assembly: an honest difference, and a typed refusal."""
    scenario = next(s for s in SCENARIOS if s.name == "exact_raw_csv_rehydration")
    outcome = await run_scenario(scenario, graph_deps)
    assert outcome.record.rehydrated_refs, "the scenario rehydrates raw evidence"
    async with graph_deps.sessions() as session, session.begin():
        await messages.append_message(session, outcome.account_id, outcome.conversation_id, NewMessage(
            branch_id=outcome.boundary.branch_id, role=MessageRole.USER, content="Thanks."))
    later = await assemble_context(graph_deps, outcome.boundary.model_copy(
        update={"now": outcome.boundary.now + timedelta(minutes=5)}))
    stored = await recompute_assembly(graph_deps, outcome.account_id, later.assembly_id)
    assert stored.identical and stored.stored.replay.previous_assembly_id == outcome.assembly_id

    # The raw object is deleted from S3 (retention): the recomputation says the bytes are missing, so the
    # messages differ from the stored ones, and `identical` says so.
    artifact_id = outcome.record.rehydrated_refs[0].split(":", 1)[1].split("#", 1)[0]
    async with graph_deps.sessions() as session:
        artifact = await tool_store.get_artifact(session, outcome.account_id, artifact_id)
    assert artifact.storage_key is not None
    await graph_deps.artifacts.delete(outcome.account_id, artifact.storage_key)
    gone = await recompute_assembly(graph_deps, outcome.account_id, outcome.assembly_id)
    assert not gone.identical
    assert RAW_MISSING_TEXT in canonical_json(list(gone.messages))

    # The previous assembly the later one continued is deleted: it can no longer be recomputed.
    async with graph_deps.sessions() as session, session.begin():
        await session.execute(delete(PolicyDecision).where(PolicyDecision.context_assembly_id == outcome.assembly_id))
        await session.execute(delete(ContextAssembly).where(ContextAssembly.id == outcome.assembly_id))
    with pytest.raises(AssemblyNotReplayableError, match="previous assembly"):
        await recompute_assembly(graph_deps, outcome.account_id, later.assembly_id)


async def test_a_memory_superseded_again_on_a_sibling_branch_replays_as_it_was(graph_deps: GraphDeps) -> None:
    """A pre-fork memory superseded on one branch, then on its sibling (which moves its ``superseded_seq``)."""
    deps = replace(graph_deps, catalog=ToolCatalog(tools=(
        ToolSpec(name="crm.get_account", result_kind="json", key_args=("account_id",)),)))
    async with deps.sessions() as session, session.begin():
        account_id = await conversations.create_account(session, name="replay across branches")
        conversation = await conversations.create_conversation(session, account_id, title="t")
        assistant = await conversations.add_participant(session, account_id, conversation.id, name="Assistant",
                                                        provider="scripted", model="m")
    root = conversation.root_branch_id
    at = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)

    async def say(branch_id: str, text: str) -> str:
        async with deps.sessions() as session, session.begin():
            return (await messages.append_message(session, account_id, conversation.id, NewMessage(
                branch_id=branch_id, role=MessageRole.USER, content=text))).id

    async def tier(branch_id: str, key: str, value: str) -> None:
        call = await begin_tool_call(deps, account_id, conversation.id, NewToolCall(
            branch_id=branch_id, participant_id=assistant.id, call_id=f"call_{key}", name="crm.get_account",
            arguments={"account_id": "A-1"}, runtime_kind=RuntimeKind.CHAT, at=at))
        await ingest_tool_result(deps, account_id, call.id, ToolOutcome(
            status=ToolCallStatus.SUCCEEDED, result=f'{{"id":"A-1","tier":"{value}"}}'.encode()), captured_at=at)

    candidates: dict[str, CandidateSet] = {}

    async def assemble(branch_id: str) -> str:
        boundary = GenerationBoundary(account_id=account_id, conversation_id=conversation.id, branch_id=branch_id,
                                      participant_id=assistant.id, runtime_kind=RuntimeKind.CHAT,
                                      provider_route="local", now=at + timedelta(minutes=5))
        assembled = await assemble_context(deps, boundary)
        candidates[assembled.assembly_id] = assembled.candidates
        return assembled.assembly_id

    await tier(root, "root", "silver")
    fork_at = await say(root, "Which tier is A-1?")
    async with deps.sessions() as session, session.begin():
        left = (await branches.fork_branch(session, account_id, conversation.id, root, fork_at, name="left")).id
        right = (await branches.fork_branch(session, account_id, conversation.id, root, fork_at, name="right")).id
    await tier(left, "left", "gold")
    await say(left, "And now?")
    stored = [await assemble(left), await assemble(root)]
    await tier(right, "right", "platinum")
    await say(right, "And now?")
    stored.append(await assemble(right))
    await tier(left, "left-again", "bronze")
    async with deps.sessions() as session:
        pre_fork = next(m for m in (await load_candidates(session, account_id, conversation.id, root)).tool_memories)
        moved_to = await session.scalar(select(ToolMemory.superseded_seq).where(ToolMemory.id == pre_fork.id))
    assert moved_to is not None and moved_to > candidates[stored[0]].snapshot_seq, \
        "the sibling's supersession did not move superseded_seq past the left assembly's snapshot"
    await _recompute_all(deps, account_id, stored)
    for assembly_id in stored:
        again = await recompute_assembly(deps, account_id, assembly_id)
        assert again.candidates == candidates[assembly_id]


async def test_a_branch_moved_under_another_parent_is_reported_as_a_difference(graph_deps: GraphDeps) -> None:
    """``reparent_branch`` rewrites a lineage in place: replay reads the new one, and ``identical`` says so."""
    async with graph_deps.sessions() as session, session.begin():
        account_id = await conversations.create_account(session, name="replay of a moved branch")
        conversation = await conversations.create_conversation(session, account_id, title="t")
        assistant = await conversations.add_participant(session, account_id, conversation.id, name="Assistant",
                                                        provider="scripted", model="m")
        root = conversation.root_branch_id
        first = await messages.append_message(session, account_id, conversation.id, NewMessage(
            branch_id=root, role=MessageRole.USER, content="The budget is 10k."))
        second = await messages.append_message(session, account_id, conversation.id, NewMessage(
            branch_id=root, role=MessageRole.USER, content="Correction: the budget is 12k."))
        moved = (await branches.fork_branch(session, account_id, conversation.id, root, second.id, name="a")).id
        await messages.append_message(session, account_id, conversation.id, NewMessage(
            branch_id=moved, role=MessageRole.USER, content="What is the budget?"))
    boundary = GenerationBoundary(account_id=account_id, conversation_id=conversation.id, branch_id=moved,
                                  participant_id=assistant.id, runtime_kind=RuntimeKind.CHAT,
                                  provider_route="local", now=datetime(2026, 11, 30, 9, 0, tzinfo=UTC))
    assembled = await assemble_context(graph_deps, boundary)
    assert "12k" in canonical_json(assembled.result.to_openai())
    async with graph_deps.sessions() as session, session.begin():
        other = (await branches.fork_branch(session, account_id, conversation.id, root, first.id, name="b")).id
        await branches.reparent_branch(session, account_id, moved, other, first.id)
    again = await recompute_assembly(graph_deps, account_id, assembled.assembly_id)
    assert not again.identical
    assert "12k" not in canonical_json(list(again.messages))
