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

import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import timedelta

import pytest
from sqlalchemy import delete, func, select, update
from temporalio.testing import WorkflowEnvironment

from activities.context import assemble_context
from activities.deps import GraphDeps
from activities.ingest import ToolOutcome, begin_tool_call, ingest_tool_result
from activities.replay import recompute_assembly
from contracts import Scope
from dossier.client import DossierClient
from dossier.runtime import build_worker
from dossier.settings import Settings
from harness.scenarios import all_scenarios
from harness.scenarios.runner import run_scenario
from policy.enums import MessageRole, ResolutionStatus, ToolCallStatus
from policy.errors import UnknownPolicyVersionError
from policy.policy import DEFAULT_POLICY, ContextPolicy
from policy.records import canonical_json
from policy.rehydration import RAW_MISSING_TEXT
from policy.versions import LEAN_POLICY
from store import branches, conversations, messages, skills, user_memories
from store import tools as tool_store
from store.assemblies import get_context_assembly, list_context_assemblies
from store.candidates import load_candidates
from store.errors import AssemblyNotReplayableError, NotFoundError
from store.models import ContextAssembly, PolicyDecision
from store.payloads import read_artifact_payload
from store.tool_memories import mark_memory_resolution

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
                                         state.skill, {**state.state, "rewritten": "after the snapshot"},
                                         active=not state.active, visibility=state.visibility)
        for memory in now.tool_memories:
            flipped = (ResolutionStatus.MISSING_SOURCE if memory.resolution is ResolutionStatus.RESOLVED
                       else ResolutionStatus.RESOLVED)
            await mark_memory_resolution(session, account_id, memory.id, flipped)
        await messages.append_message(session, account_id, conversation_id, branch_id, role=MessageRole.USER,
                                      content="And what about Q4?")


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
    await _move_on(deps, outcome.account_id, outcome.conversation_id, boundary.branch_id)
    # The same participant's next call, after all that: it continues the first one's epoch.
    later = await assemble_context(deps, boundary.model_copy(update={"now": boundary.now + timedelta(minutes=5)}))
    assert later.result.messages != outcome.messages, "the graph did not move on in a way the context shows"

    await _recompute_all(deps, outcome.account_id, [outcome.assembly_id, later.assembly_id])
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


# --------------------------------------------------------------------------- a real multi-step turn through Temporal


@pytest.fixture
async def dossier(temporal_env: WorkflowEnvironment, graph_deps: GraphDeps) -> AsyncIterator[DossierClient]:
    """A client in a fresh account, with an in-process worker on a fresh task queue."""
    task_queue = f"dossier-replay-{uuid.uuid4().hex[:8]}"
    async with graph_deps.sessions() as session, session.begin():
        account_id = await conversations.create_account(session, name="replay test")
    worker = build_worker(temporal_env.client, graph_deps, task_queue=task_queue,
                          workflow_failure_exception_types=[Exception])
    client = DossierClient(deps=graph_deps, temporal=temporal_env.client,
                           settings=Settings(temporal_task_queue=task_queue), account_id=account_id,
                           poll_seconds=0.2)
    async with worker:
        yield client


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
    again = await begin_tool_call(deps, account_id, branch.conversation_id, call.branch_id, call.participant_id,
                                  call_id=call_id, name=call.name, arguments=call.arguments,
                                  runtime_kind=call.runtime_kind, at=artifact.captured_at + timedelta(hours=1))
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
                                     {"step": "gather"})

    first = await dossier.chat(QUESTION, conversation_id=conversation_id)
    assert first.result.status == "answered" and len(first.result.model_run_ids) >= 4
    first_ids = await _assembly_ids(dossier, conversation_id)
    assert len(first_ids) == len(first.result.model_run_ids)

    # The graph moves on: a new user memory, the skill state rewritten, the same question twice more (new
    # tool calls, artifacts and memories superseding the first turn's), memory resolutions changed.
    async with dossier.deps.sessions() as session, session.begin():
        await user_memories.put_user_memory(session, account, LATE_USER_MEMORY)
        await skills.put_skill_state(session, account, conversation_id, branch_id, participant, "report",
                                     {"step": "write"})
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
        await messages.append_message(session, outcome.account_id, outcome.conversation_id,
                                      outcome.boundary.branch_id, role=MessageRole.USER, content="Thanks.")
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
