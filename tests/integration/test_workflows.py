"""Every runtime mode as Temporal workflows on a real dev server, with real Postgres and S3 underneath.

The worker runs in-process (the fault test also runs one as a separate
process and kills it); models are the offline scripted ones and the tools are
the real registry tools over the bundled workspace.
"""

from __future__ import annotations

import asyncio
import json
import re
import os
import signal
import subprocess
import sys
import uuid

import pytest
from datetime import timedelta
from pathlib import Path

from sqlalchemy import func, select
from temporalio.api.enums.v1 import EventType
from temporalio.testing import WorkflowEnvironment

from activities.deps import GraphDeps
from contracts import ANSWER_TOOL_SIGNAL, AnswerToolInput, Scope, TurnInput, TurnResult, WorkflowName
from dossier.client import DossierClient
from dossier.services.models import Endpoints
from dossier.services.worker import worker_environment
from dossier.settings import Settings
from activities.ingest import ToolOutcome, ingest_tool_result, memory_id_for
from activities.tools.registry import default_registry
from policy.derive import subject_key
from policy.enums import MessageRole, ToolCallStatus
from policy.records import canonical_json
from store import checkpoints, conversations, messages
from store import tools as tool_store
from store.assemblies import get_context_assembly, list_context_assemblies
from store.tool_memories import get_tool_memory
from store.models import Message, ToolArtifact, ToolCall
from store.writes import NewMessage

ROOT = Path(__file__).resolve().parents[2]


async def _artifact_counts(client: DossierClient, tool_call_ids: tuple[str, ...]) -> dict[str, int]:
    async with client.deps.sessions() as session:
        rows = await session.execute(
            select(ToolArtifact.tool_call_id, func.count()).where(
                ToolArtifact.account_id == client.account_id, ToolArtifact.tool_call_id.in_(tool_call_ids)
            ).group_by(ToolArtifact.tool_call_id))
    return {tool_call_id: count for tool_call_id, count in rows.all()}


async def _assembly_messages(client: DossierClient, model_run_id: str) -> list[dict]:
    async with client.deps.sessions() as session:
        run = await messages.get_model_run(session, client.account_id, model_run_id)
        stored = await get_context_assembly(session, client.account_id, run.context_assembly_id, with_messages=True)
    return stored.messages


async def _assembly_text(client: DossierClient, model_run_id: str) -> str:
    """Every message's text and tool calls, as the model read them."""
    return "\n".join((message.get("content") or "") + json.dumps(message.get("tool_calls") or "")
                     for message in await _assembly_messages(client, model_run_id))


async def _private_markers(client: DossierClient, tool_call_ids: tuple[str, ...]) -> dict[str, str]:
    """What a leak of these tool calls would put in another context: each record's citation prefix.

    A context names a tool call, its captured result and the memory derived from it by id: the
    native ``tool_calls`` id (``call_<call row id>``) and the ``[t:…]``, ``[a:…]``, ``[m:…]``
    citations, whose short form is at least the first 8 hex digits of the id. Those digits are
    unique to the records, unlike the results' text (two models running the same script read the
    same CSV). Returns ``{marker: record}``.
    """
    async with client.deps.sessions() as session:
        artifact_ids = (await session.execute(
            select(ToolArtifact.id).where(ToolArtifact.account_id == client.account_id,
                                          ToolArtifact.tool_call_id.in_(tool_call_ids)))).scalars().all()
    records = {**{f"tool_call:{i}": i for i in tool_call_ids}, **{f"artifact:{i}": i for i in artifact_ids},
               **{f"memory:{memory_id_for(i)}": memory_id_for(i) for i in artifact_ids}}
    assert artifact_ids, "no captured results to look for"
    return {record_id.replace("-", "")[:8]: ref for ref, record_id in records.items()}


async def _leaked(
    client: DossierClient, markers: dict[str, str], run_id: str, author_runs: tuple[str, ...]
) -> list[str]:
    """The records among ``markers`` that the context of ``run_id`` names outside the author's transcript.

    The author's transcript messages (written by ``author_runs``) are shared on purpose and may cite the
    author's own results by id (``[t:…]``); they are cut out first, so what is left can only name the
    records through the author's private tool state.
    """
    text = await _assembly_text(client, run_id)
    async with client.deps.sessions() as session:
        shared = (await session.execute(
            select(Message.content).where(Message.account_id == client.account_id,
                                          Message.model_run_id.in_(author_runs)))).scalars().all()
    for content in sorted(shared, key=len, reverse=True):
        if content:
            text = text.replace(content, "")
    return sorted(ref for marker, ref in markers.items() if marker in text)


async def _history_bytes(env: WorkflowEnvironment, workflow_id: str) -> tuple[int, bytes]:
    history = await env.client.get_workflow_handle(workflow_id).fetch_history()
    raw = history.to_json().encode()
    return len(raw), raw


# --------------------------------------------------------------------------- chat


async def test_chat_turn_runs_a_multi_step_tool_loop_with_ids_only_history(
    dossier: DossierClient, temporal_env: WorkflowEnvironment
) -> None:
    outcome = await dossier.chat("Which region drove Q3 2026 revenue? Write me a short report.")
    result = outcome.result
    assert result.status == "answered"
    assert len(result.model_run_ids) >= 4 and len(result.tool_call_ids) >= 3
    # Every tool call captured exactly once, and every model call has its persisted assembly.
    counts = await _artifact_counts(dossier, result.tool_call_ids)
    assert counts == {tool_call_id: 1 for tool_call_id in result.tool_call_ids}
    async with dossier.deps.sessions() as session:
        for run_id in result.model_run_ids:
            run = await messages.get_model_run(session, dossier.account_id, run_id)
            assert run.workflow_id == outcome.workflow_id and run.context_assembly_id
    # The answer cites the results it used: memories of the prefix, its own calls' native results.
    assert re.search(r"\[[mt]:[0-9a-f]{8}\]", outcome.answer)
    # The history carries ids, not the CSV it read or the prompts it assembled.
    size, raw = await _history_bytes(temporal_env, outcome.workflow_id)
    assert b"order_id" not in raw and b"revenue_eur" not in raw and b"You are" not in raw
    assert size < 200_000


async def _message_count(client: DossierClient, conversation_id: str) -> int:
    async with client.deps.sessions() as session:
        return (await session.execute(select(func.count()).select_from(Message).where(
            Message.account_id == client.account_id, Message.conversation_id == conversation_id))).scalar_one()


async def test_the_history_of_a_turn_does_not_grow_with_the_conversation(
    dossier: DossierClient, temporal_env: WorkflowEnvironment
) -> None:
    question = "Which region drove Q3 2026 revenue? Write me a short report."
    first = await dossier.chat(question)  # the tool loop: several model calls, a larger history
    # The same turn (the same question, answered from what the conversation already holds) on the 7th
    # message and on the 100th: the history carries ids, never the transcript, so both are the same size.
    early = await dossier.chat(question, conversation_id=first.conversation_id)
    assert await _message_count(dossier, first.conversation_id) == 8
    answer = await dossier.message_text(early.result.message_id)
    async with dossier.deps.sessions() as session, session.begin():
        for n in range(99 - 8):  # 45 more exchanges and one more question: the next turn's message is the 100th
            author = {} if n % 2 == 0 else {"author_participant_id": early.participant_id}
            await messages.append_message(session, dossier.account_id, first.conversation_id, NewMessage(
                branch_id=first.branch_id, role=MessageRole.USER if n % 2 == 0 else MessageRole.ASSISTANT,
                content=question if n % 2 == 0 else answer or "", **author))
    assert await _message_count(dossier, first.conversation_id) == 99
    late = await dossier.chat(question, conversation_id=first.conversation_id)  # its message is the 100th
    assert late.result.status == "answered"
    assert len(late.result.model_run_ids) == len(early.result.model_run_ids)  # the same work
    early_size = (await _history_bytes(temporal_env, early.workflow_id))[0]
    late_size = (await _history_bytes(temporal_env, late.workflow_id))[0]
    # 46 more exchanges of transcript (tens of KB) would show; ids of equal length do not.
    assert abs(late_size - early_size) <= 0.01 * early_size, (early_size, late_size)


async def test_a_long_tool_loop_continues_as_new_from_a_checkpoint(
    dossier: DossierClient, temporal_env: WorkflowEnvironment
) -> None:
    scope_conversation, branch = await dossier.new_conversation("continue as new")
    scope = Scope(account_id=dossier.account_id, conversation_id=scope_conversation, branch_id=branch)
    participant = await dossier.participant(scope, "scripted:analyst")
    await dossier.say(scope, "Which region drove Q3 2026 revenue? Write me a short report.")
    handle = await temporal_env.client.start_workflow(
        WorkflowName.AGENT_TURN, TurnInput(scope=scope, participant_id=participant, rounds_per_run=2),
        id=f"turn-can-{uuid.uuid4().hex[:8]}", task_queue=dossier.settings.temporal_task_queue,
        result_type=TurnResult)
    result = await handle.result()
    assert result.status == "answered" and len(result.model_run_ids) >= 4
    # The first run ended by continuing as new; the handle followed the chain to the answer.
    first_run = temporal_env.client.get_workflow_handle(handle.id, run_id=handle.first_execution_run_id)
    first_history = await first_run.fetch_history()
    assert first_history.events[-1].event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW
    async with dossier.deps.sessions() as session:
        saved = await list_context_assemblies(session, dossier.account_id, conversation_id=scope_conversation)
    restores = [d for a in saved for d in a.decisions if d.kind == "restore"]
    assert restores and all(d.subject_ref.startswith("checkpoint:") for d in restores)


# --------------------------------------------------------------------------- retries and failures


async def test_a_tool_that_fails_twice_then_succeeds_leaves_its_retry_history(dossier: DossierClient) -> None:
    outcome = await dossier.chat("Run the flaky check; it fails 2 times first.", model="scripted:flaky")
    assert outcome.result.status == "answered"
    (tool_call_id,) = outcome.result.tool_call_ids
    async with dossier.deps.sessions() as session:
        call = await tool_store.get_tool_call(session, dossier.account_id, tool_call_id)
        history = await tool_store.get_tool_call_history(session, dossier.account_id, tool_call_id)
        artifact = await tool_store.get_artifact_for_tool_call(session, dossier.account_id, tool_call_id)
    assert call.status is ToolCallStatus.SUCCEEDED and call.attempts == 3
    failed = [entry for entry in history if entry.get("status") == "retrying"]
    assert [entry.get("attempt") for entry in failed] == [1, 2]
    assert all("transient failure" in (entry.get("error") or "") for entry in failed)
    assert artifact.status is ToolCallStatus.SUCCEEDED


async def test_when_every_attempt_fails_the_error_becomes_protected_recovery_state(dossier: DossierClient) -> None:
    outcome = await dossier.chat("Run the flaky check; it fails 9 times first.", model="scripted:flaky")
    assert outcome.result.status == "answered"
    (tool_call_id,) = outcome.result.tool_call_ids
    async with dossier.deps.sessions() as session:
        call = await tool_store.get_tool_call(session, dossier.account_id, tool_call_id)
        artifact = await tool_store.get_artifact_for_tool_call(session, dossier.account_id, tool_call_id)
    assert call.status is ToolCallStatus.FAILED and artifact.status is ToolCallStatus.FAILED
    # The model call after the failure saw it as an open, failed, retry-critical call.
    seen = await _assembly_text(dossier, outcome.result.model_run_ids[-1])
    assert "FAILED after" in seen and "retry-critical" in seen and "transient failure" in seen


# --------------------------------------------------------------------------- deferred tools


async def test_a_deferred_tool_waits_durably_and_stays_visible_while_pending(dossier: DossierClient) -> None:
    pending = await dossier.chat("I want to review one of the sales files; let me pick it.",
                                 model="scripted:picker", wait=False)
    (tool_call_id,) = await dossier.wait_until_waiting(pending.workflow_id)
    # Meanwhile the user asks where things stand: the open picker is protected recovery context.
    status = await dossier.chat("Where are we on this, what's still pending?",
                                conversation_id=pending.conversation_id, model="scripted:picker")
    seen = await _assembly_text(dossier, status.result.model_run_ids[-1])
    assert "the call is deferred" in seen and "user__pick_file" in seen
    await dossier.answer(tool_call_id, json.dumps({"path": "sales/2026-q2-orders.csv"}))
    done = await dossier.wait_turn(pending)
    assert done.result.status == "answered"
    assert "sales/2026-q2-orders.csv" in (await _assembly_text(dossier, done.result.model_run_ids[-1]))


async def test_a_deferred_answer_is_derived_under_the_registered_tool_spec(dossier: DossierClient) -> None:
    """The client captures a human's answer with the same tool catalog the worker uses.

    ``user.pick_file`` identifies its subject by ``prompt`` alone; the default spec a
    catalog-less client would fall back to keys it by every argument instead.
    """
    pending = await dossier.chat("I want to review one of the sales files; let me pick it.",
                                 model="scripted:picker", wait=False)
    (tool_call_id,) = await dossier.wait_until_waiting(pending.workflow_id)
    await dossier.answer(tool_call_id, json.dumps({"path": "sales/2026-q3-orders.csv"}))
    await dossier.wait_turn(pending)
    spec = default_registry().get("user.pick_file").spec
    async with dossier.deps.sessions() as session:
        call = await tool_store.get_tool_call(session, dossier.account_id, tool_call_id)
        artifact = await tool_store.get_artifact_for_tool_call(session, dossier.account_id, tool_call_id)
        memory = await get_tool_memory(session, dossier.account_id, memory_id_for(artifact.id))
    assert memory.subject_key == subject_key(spec, dict(call.arguments))
    assert memory.subject_key == f"user.pick_file:{canonical_json({'prompt': call.arguments['prompt']})}"
    assert (artifact.tool_version, memory.freshness) == (spec.version, spec.freshness)


async def test_a_turn_resumes_on_the_committed_answer_not_on_the_signal(dossier: DossierClient) -> None:
    """The client signals first and commits the captured answer after: the turn waits for the commit.

    Here the answer is committed a second after the signal (a slow commit); before, the next model call
    ran at once and saw the call still deferred.
    """
    pending = await dossier.chat("I want to review one of the sales files; let me pick it.",
                                 model="scripted:picker", wait=False)
    (tool_call_id,) = await dossier.wait_until_waiting(pending.workflow_id)
    handle = dossier.temporal.get_workflow_handle(pending.workflow_id)
    await handle.signal(ANSWER_TOOL_SIGNAL, AnswerToolInput(tool_call_id=tool_call_id))
    await asyncio.sleep(1.0)
    await ingest_tool_result(dossier.deps, dossier.account_id, tool_call_id, ToolOutcome(
        status=ToolCallStatus.SUCCEEDED, result=json.dumps({"path": "sales/2026-q2-orders.csv"}).encode(),
        content_type="application/json"))
    done = await dossier.wait_turn(pending)
    assert done.result.status == "answered"
    seen = await _assembly_text(dossier, done.result.model_run_ids[1])
    assert "sales/2026-q2-orders.csv" in seen and "the call is deferred" not in seen


# --------------------------------------------------------------------------- multi-model, branch send


async def test_multi_model_turn_keeps_each_models_tool_state_private(dossier: DossierClient) -> None:
    outcomes = await dossier.multi("Summarise Q3 2026 revenue by region.", ["scripted:analyst", "scripted:analyst"])
    assert [o.result.status for o in outcomes] == ["answered", "answered"]
    first, second = outcomes
    async with dossier.deps.sessions() as session:
        first_calls = [await tool_store.get_tool_call(session, dossier.account_id, t) for t in first.result.tool_call_ids]
    assert all(call.visibility.value == "participant_private" for call in first_calls)
    # The second model never sees the first one's tool calls, results or memories (and vice versa). The
    # markers are what such a record looks like in a context: the first model's own last call shows them.
    for own, other in ((first, second), (second, first)):
        markers = await _private_markers(dossier, own.result.tool_call_ids)
        assert await _leaked(dossier, markers, own.result.model_run_ids[-1], own.result.model_run_ids)
        for run_id in other.result.model_run_ids:
            assert await _leaked(dossier, markers, run_id, own.result.model_run_ids) == []
    runs = await dossier.runs.list(first.conversation_id)
    assert {row.runtime_kind for row in runs} == {"multi_model"}


async def test_branch_send_runs_on_the_fork_without_sibling_state(dossier: DossierClient) -> None:
    first = await dossier.chat("Which region drove Q3 2026 revenue? Write me a short report.")
    opening = await dossier.first_user_message(first.conversation_id, first.branch_id)
    branch = await dossier.fork(first.conversation_id, opening, branch_id=first.branch_id)
    sent = await dossier.send_on_branch("Same analysis for Q2 2026 instead, please.",
                                        conversation_id=first.conversation_id, branch_id=branch)
    assert sent.result.status == "answered"
    seen = await _assembly_text(dossier, sent.result.model_run_ids[0])
    assert "Which region drove Q3 2026 revenue?" in seen  # the fork point's lineage
    # Nothing of the sibling branch after the fork point: not its tool calls, results or memories (the
    # markers are what the sibling's own last call shows of them), its Q3 rows, nor its answer.
    sibling = await _private_markers(dossier, first.result.tool_call_ids)
    assert await _leaked(dossier, sibling, first.result.model_run_ids[-1], first.result.model_run_ids)
    for run_id in sent.result.model_run_ids:
        assert await _leaked(dossier, sibling, run_id, ()) == []
    raw_q3 = (ROOT / "dossier/workspace/sales/2026-q3-orders.csv").read_text().splitlines()
    assert not any(line in seen for line in raw_q3[1:6])
    assert first.answer not in seen
    runs = [r for r in await dossier.runs.list(first.conversation_id) if r.branch_id == branch]
    assert runs and {r.runtime_kind for r in runs} == {"branch_send"}


# --------------------------------------------------------------------------- subagents


async def test_subagent_raw_payloads_stay_out_of_the_parent_while_reports_and_files_arrive(
    dossier: DossierClient,
) -> None:
    batch, workflow_id, resume = await dossier.subagents(
        "Audit both quarters before the board meeting.",
        [("scripted:researcher", "Analyse sales/2026-q3-orders.csv by region."),
         ("scripted:researcher", "Analyse sales/2026-q2-orders.csv by region.")])
    assert [c.status for c in batch.children] == ["succeeded", "succeeded"]
    assert all(c.promoted_memory_ids for c in batch.children)
    assert resume is not None and resume.result.status == "answered"
    parent_view = await _assembly_text(dossier, resume.result.model_run_ids[0])
    assert "report:" in parent_view and "generated file" in parent_view
    # The children's raw CSV rows never reach the parent.
    raw_q3 = (ROOT / "dossier/workspace/sales/2026-q3-orders.csv").read_text().splitlines()
    assert not any(line in parent_view for line in raw_q3[1:6])
    # The restore from the batch checkpoint is logged as a policy decision.
    async with dossier.deps.sessions() as session:
        run = await messages.get_model_run(session, dossier.account_id, resume.result.model_run_ids[0])
        stored = await get_context_assembly(session, dossier.account_id, run.context_assembly_id)
        checkpoint = await checkpoints.get_checkpoint(session, dossier.account_id, batch.checkpoint_id)
    assert any(d.kind == "restore" and d.subject_ref == f"checkpoint:{batch.checkpoint_id}" for d in stored.decisions)
    assert set(checkpoint.references) == {m for c in batch.children for m in c.promoted_memory_ids}


async def test_a_child_that_times_out_is_promoted_as_a_compact_failure(dossier: DossierClient) -> None:
    batch, _, resume = await dossier.subagents(
        "Check the slow source.", [("scripted:sleeper", "Sleep for 30 seconds.")], child_timeout_seconds=2)
    (child,) = batch.children
    assert child.status == "timed_out" and child.promoted_memory_ids
    assert "timed out" in await _assembly_text(dossier, resume.result.model_run_ids[0])


# --------------------------------------------------------------------------- discussion


async def test_discussion_keeps_speaker_labels_directives_and_private_tools(dossier: DossierClient) -> None:
    turns, _ = await dossier.discuss("Should we shift Q4 marketing budget toward the strongest Q3 region?",
                                     ["scripted:panelist", "scripted:panelist"], rounds=2,
                                     directive="Each speaker: at most 2 sentences, cite a source id.")
    assert len(turns) == 4 and all(t.result.status == "answered" for t in turns)
    second_speaker_view = await _assembly_text(dossier, turns[1].result.model_run_ids[0])
    assert "Moderator directive: Each speaker: at most 2 sentences" in second_speaker_view
    assert f"{turns[0].participant}:" in second_speaker_view  # the other panelist, labelled
    async with dossier.deps.sessions() as session:
        for tool_call_id in turns[0].result.tool_call_ids:
            call = await tool_store.get_tool_call(session, dossier.account_id, tool_call_id)
            assert call.visibility.value == "participant_private"
    # The first panelist's tools stay its own: none of its tool calls, results or memories reaches the
    # second panelist (the markers are what they look like in the first panelist's own next turn).
    markers = await _private_markers(dossier, turns[0].result.tool_call_ids)
    first_panelist_runs = (*turns[0].result.model_run_ids, *turns[2].result.model_run_ids)
    assert await _leaked(dossier, markers, turns[2].result.model_run_ids[0], first_panelist_runs)
    for run_id in (*turns[1].result.model_run_ids, *turns[3].result.model_run_ids):
        assert await _leaked(dossier, markers, run_id, first_panelist_runs) == []


# --------------------------------------------------------------------------- schedules


@pytest.mark.slow  # the full tier only: waits for a schedule to fire twice
async def test_a_schedule_fires_twice_and_each_run_is_a_turn_in_the_graph(dossier: DossierClient) -> None:
    schedule_id = f"test-digest-{uuid.uuid4().hex[:8]}"
    conversation, _ = await dossier.new_conversation("scheduled digest")
    await dossier.schedules.create(schedule_id, "Digest of open support tickets by priority.",
                                  every=timedelta(seconds=2), conversation_id=conversation)
    try:
        first = await dossier.schedules.wait_run(schedule_id, after=0, timeout=60)
        second = await dossier.schedules.wait_run(schedule_id, after=1, timeout=60)
        listed = {row["schedule_id"] for row in await dossier.schedules.list()}
        assert schedule_id in listed
        await dossier.schedules.pause(schedule_id)
    finally:
        await dossier.schedules.delete(schedule_id)
    assert first.workflow_id != second.workflow_id
    assert first.result.status == second.result.status == "answered"
    runs = await dossier.runs.list(conversation)
    kinds = {row.runtime_kind for row in runs}
    assert kinds == {"scheduled_job"}
    transcript = await dossier.transcript(conversation, first.branch_id)
    assert sum(1 for _, text in transcript if text.startswith("Scheduled run")) >= 2


# --------------------------------------------------------------------------- crash recovery


@pytest.mark.slow  # the full tier only: kills a worker process
async def test_killing_the_worker_mid_tool_loses_and_duplicates_nothing(
    temporal_env: WorkflowEnvironment, graph_deps: GraphDeps, endpoints: Endpoints, s3_bucket: str,
    database_url: str,
) -> None:
    task_queue = f"dossier-crash-{uuid.uuid4().hex[:8]}"
    async with graph_deps.sessions() as session, session.begin():
        account_id = await conversations.create_account(session, name="crash test")
    client = DossierClient(deps=graph_deps, temporal=temporal_env.client,
                           settings=Settings(temporal_task_queue=task_queue), account_id=account_id)
    settings = Settings(temporal_task_queue=task_queue, s3_bucket=s3_bucket)
    target = temporal_env.client.service_client.config.target_host
    env = worker_environment(settings, Endpoints(**{
        **endpoints.__dict__, "database_url": database_url, "s3_bucket": s3_bucket,
        "temporal_address": target, "temporal_namespace": "default"}))

    def spawn_worker() -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-m", "worker"], cwd=ROOT, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

    first = spawn_worker()
    try:
        pending = await client.chat("Sleep for 6 seconds, then tell me.", model="scripted:sleeper", wait=False)
        # Wait until the sleep tool is running on the first worker, then kill it hard.
        for _ in range(300):
            async with graph_deps.sessions() as session:
                running = await session.scalar(select(func.count()).select_from(ToolCall).where(
                    ToolCall.account_id == account_id, ToolCall.name == "diag.sleep"))
            if running:
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.5)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=10)
        second = spawn_worker()
        try:
            done = await asyncio.wait_for(client.wait_turn(pending), timeout=120)
        finally:
            second.send_signal(signal.SIGTERM)
            second.wait(timeout=30)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
    assert done.result.status == "answered"
    counts = await _artifact_counts(client, done.result.tool_call_ids)
    assert counts == {tool_call_id: 1 for tool_call_id in done.result.tool_call_ids}
    async with graph_deps.sessions() as session:
        calls = [await tool_store.get_tool_call(session, account_id, t) for t in done.result.tool_call_ids]
    assert all(call.status is ToolCallStatus.SUCCEEDED for call in calls)
