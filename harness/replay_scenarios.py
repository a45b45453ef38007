"""The sessions ``harness.replay_histories`` records: one per interesting path of the workflows.

Each scenario drives real workflows through :class:`~dossier.client.DossierClient`
(or, where the client has no option for it, a direct start with a tuned
:class:`~contracts.TurnInput`) with the offline scripted models, checks the
outcome it exists to record, and returns the id of the top-level workflow it
started. Its name is the ``<scenario>`` part of the history file names, so
renaming one renames its files.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from temporalio.client import Client

from contracts import RetentionRunInput, RetentionRunResult, Scope, TurnInput, TurnResult, WorkflowName
from dossier.client import DossierClient
from dossier.retention import start_account_deletion
from store.conversations import create_account

TASK_QUEUE = "dossier-replay"
"""Fixed, so the task queue recorded in every history is the same from one recording to the next."""

ANALYSIS = "Which region drove Q3 2026 revenue? Write me a short report."

Scenario = Callable[[DossierClient, Client], Awaitable[str]]
"""Drives one session to its end; returns the id of the top-level workflow it started."""


async def chat_tool_loop(dossier: DossierClient, temporal: Client) -> str:
    """A chat turn with several tool calls (list, read CSV, aggregate, write the report)."""
    outcome = await dossier.chat(ANALYSIS, model="scripted:analyst")
    _check(outcome.result, "answered")
    return outcome.workflow_id


async def deferred_tool(dossier: DossierClient, temporal: Client) -> str:
    """A turn parked on a deferred tool (the picker asks for a file), resumed by the ``answer_tool`` signal."""
    pending = await dossier.chat("I want to review one of the sales files; let me pick it.",
                                 model="scripted:picker", wait=False)
    for tool_call_id in await dossier.wait_until_waiting(pending.workflow_id):
        await dossier.answer(tool_call_id, json.dumps({"path": "sales/2026-q2-orders.csv"}))
    _check((await dossier.wait_turn(pending)).result, "answered")
    return pending.workflow_id


async def branch_send(dossier: DossierClient, temporal: Client) -> str:
    """A turn on a branch forked at the first question of an answered conversation."""
    first = await dossier.chat(ANALYSIS, model="scripted:analyst")
    opening = await dossier.first_user_message(first.conversation_id, first.branch_id)
    branch = await dossier.fork(first.conversation_id, opening, branch_id=first.branch_id)
    sent = await dossier.send_on_branch("Same analysis for Q2 2026 instead, please.",
                                        conversation_id=first.conversation_id, branch_id=branch)
    _check(sent.result, "answered")
    return sent.workflow_id


async def continue_as_new(dossier: DossierClient, temporal: Client) -> str:
    """A tool loop longer than ``rounds_per_run``: checkpoint, continue as new, restore, answer."""
    return await _analysis_turn(dossier, temporal, "continue as new", "answered", rounds_per_run=2)


async def max_rounds(dossier: DossierClient, temporal: Client) -> str:
    """A turn that runs out of model calls before the model answers."""
    return await _analysis_turn(dossier, temporal, "max rounds", "max_rounds", max_rounds=2)


async def _analysis_turn(dossier: DossierClient, temporal: Client, title: str, expected: str, **turn: int) -> str:
    """The analyst's turn on a new conversation, started with ``turn`` settings the client does not expose."""
    conversation, branch = await dossier.new_conversation(title)
    scope = Scope(account_id=dossier.account_id, conversation_id=conversation, branch_id=branch)
    participant = await dossier.participant(scope, "scripted:analyst")
    message_id = await dossier.say(scope, ANALYSIS)
    handle = await temporal.start_workflow(
        WorkflowName.AGENT_TURN, TurnInput(scope=scope, participant_id=participant, **turn),
        id=f"turn-{message_id}", task_queue=TASK_QUEUE, result_type=TurnResult)
    _check(await handle.result(), expected)
    return handle.id


async def tool_retried(dossier: DossierClient, temporal: Client) -> str:
    """A tool that fails twice and succeeds on its third attempt (retries inside one activity)."""
    outcome = await dossier.chat("Run the flaky check; it fails 2 times first.", model="scripted:flaky")
    _check(outcome.result, "answered")
    return outcome.workflow_id


async def tool_failed(dossier: DossierClient, temporal: Client) -> str:
    """A tool that fails every attempt: ``execute_tool`` raises, ``finalize_tool_failure`` runs."""
    outcome = await dossier.chat("Run the flaky check; it fails 9 times first.", model="scripted:flaky")
    _check(outcome.result, "answered")
    return outcome.workflow_id


async def multi_model(dossier: DossierClient, temporal: Client) -> str:
    """Two models answer the same message in parallel child turns."""
    outcomes = await dossier.multi("Summarise Q3 2026 revenue by region.", ["scripted:analyst", "scripted:echo"])
    for outcome in outcomes:
        _check(outcome.result, "answered")
    return outcomes[0].workflow_id


async def subagents(dossier: DossierClient, temporal: Client) -> str:
    """Two subagent children, promotion of each, the batch checkpoint and the parent's resume."""
    batch, workflow_id, resume = await dossier.subagents(
        "Audit both quarters before the board meeting.",
        [("scripted:researcher", "Analyse sales/2026-q3-orders.csv by region."),
         ("scripted:researcher", "Analyse sales/2026-q2-orders.csv by region.")])
    if [child.status for child in batch.children] != ["succeeded", "succeeded"] or resume is None:
        raise RuntimeError(f"subagent batch {workflow_id} did not succeed: {batch}")
    _check(resume.result, "answered")
    return workflow_id


async def subagent_timeout(dossier: DossierClient, temporal: Client) -> str:
    """A child that outlives its execution timeout: the batch promotes it as a timed-out failure."""
    batch, workflow_id, resume = await dossier.subagents(
        "Check the slow source.", [("scripted:sleeper", "Sleep for 30 seconds.")], child_timeout_seconds=2)
    if [child.status for child in batch.children] != ["timed_out"] or resume is None:
        raise RuntimeError(f"subagent batch {workflow_id} did not time its child out: {batch}")
    return workflow_id


async def discussion(dossier: DossierClient, temporal: Client) -> str:
    """Two panelists, two rounds, under a moderator directive."""
    turns, workflow_id = await dossier.discuss(
        "Should we shift Q4 marketing budget toward the strongest Q3 region?",
        ["scripted:panelist", "scripted:panelist"], rounds=2,
        directive="Each speaker: at most 2 sentences, cite a source id.")
    for turn in turns:
        _check(turn.result, "answered")
    return workflow_id


async def scheduled_job(dossier: DossierClient, temporal: Client) -> str:
    """A Temporal Schedule fires (triggered now): the job writes its prompt and runs a turn."""
    schedule_id = "replay-digest"
    await dossier.schedules.create(schedule_id, "Digest of open support tickets by priority.",
                                  every=timedelta(hours=24), model="scripted:digest")
    try:
        await dossier.schedules.trigger(schedule_id)
        job = await dossier.schedules.wait_run(schedule_id, timeout=120)
    finally:
        await dossier.schedules.delete(schedule_id)
    _check(job.result, "answered")
    return job.workflow_id


async def retention_run(dossier: DossierClient, temporal: Client) -> str:
    """A garbage-collection run at a fixed logical time, over a graph with a turn's records in it."""
    await _analysis_turn(dossier, temporal, "retention", "answered")
    handle = await temporal.start_workflow(
        WorkflowName.RETENTION, RetentionRunInput(now=datetime(2027, 1, 1, tzinfo=UTC), batch_size=2),
        id="replay-retention", task_queue=TASK_QUEUE, result_type=RetentionRunResult)
    await handle.result()
    return handle.id


async def delete_account(dossier: DossierClient, temporal: Client) -> str:
    """An account with a turn's records and a generated report, deleted step by step."""
    async with dossier.deps.sessions() as session, session.begin():
        account_id = await create_account(session, name="replay deletion")
    doomed = replace(dossier, account_id=account_id)
    await _analysis_turn(doomed, temporal, "deleted", "answered")
    handle = await start_account_deletion(temporal, dossier.deps, TASK_QUEUE, account_id, batch_size=50)
    await handle.result()
    return handle.id


SCENARIOS: dict[str, Scenario] = {
    "chat-tool-loop": chat_tool_loop,
    "deferred-tool": deferred_tool,
    "branch-send": branch_send,
    "continue-as-new": continue_as_new,
    "max-rounds": max_rounds,
    "tool-retried": tool_retried,
    "tool-failed": tool_failed,
    "multi-model": multi_model,
    "subagents": subagents,
    "subagent-timeout": subagent_timeout,
    "discussion": discussion,
    "scheduled-job": scheduled_job,
    "retention-run": retention_run,
    "delete-account": delete_account,
}
"""Scenario name (the path in the file names) -> the session that records it."""


def _check(result: TurnResult | None, status: str) -> None:
    if result is None or result.status != status:
        raise RuntimeError(f"expected a turn that ended {status!r}, got {result}")


__all__ = ["SCENARIOS", "TASK_QUEUE", "Scenario"]
