"""`dossier demo`: the main job. A real multi-step agent session through every runtime mode.

Brings up the embedded stack (Postgres, S3, the Temporal dev server, the
local model and a worker). First the local model takes a few short turns with
real tool calls, a deferred picker and a branch (see :mod:`dossier.commands.demo_local`;
a step where it calls no tool is reported as such). Then it drives one conversation
with the offline scripted models
through real workflows and real tools: a multi-step analysis turn, a
deferred file picker answered by the "user", a branch send, a multi-model
turn, a subagent batch with parent resume, a moderated discussion and a
scheduled job. It prints the transcript, each model call's legacy vs
assembled tokens, and where to inspect the runs in the Temporal UI. It ends with
the session's audit trail (see :mod:`dossier.commands.demo_audit`): ``explain`` of
a model run, ``why-not`` of a record it kept out, the inspector's login URL and
the Temporal UI search for the conversation's workflows.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Sequence
from datetime import timedelta

from dossier.client import DossierClient, TurnOutcome
from dossier.commands.agent import _run
from dossier.commands.demo_audit import audit_trail
from dossier.commands.demo_local import local_session
from dossier.services import FULL_STACK, ensure_services
from dossier.settings import Settings


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `demo`."""
    parser = subparsers.add_parser("demo", help="run a real agent session through every runtime mode")
    parser.add_argument("--json", action="store_true", help="print the model-call figures as JSON at the end")
    parser.set_defaults(handler=lambda args: _run(_demo(args)))


def _say(text: str = "") -> None:
    print(text, flush=True)


def _section(title: str) -> None:
    _say()
    _say(f"=== {title}")


def _turn(outcome: TurnOutcome) -> None:
    status = outcome.result.status if outcome.result else "running"
    _say(f"[{outcome.participant}] {outcome.answer or '(' + status + ')'}")
    _say(f"    {len(outcome.model_run_ids)} model call(s); workflow {outcome.workflow_id}")


async def _demo(args: argparse.Namespace) -> int:
    settings = Settings()
    endpoints = await asyncio.to_thread(ensure_services, settings, FULL_STACK)
    progress = (lambda line: print(f"  … {line}", file=sys.stderr, flush=True))
    async with DossierClient.connect(settings) as client:
        _section("0. A real local model: tool calls, a deferred picker and a branch, through the same workflows")
        local: Sequence[str] = ()
        began = time.monotonic()
        try:
            local = await local_session(client, f"local:{endpoints.llm_model or settings.local_model_name}", _say,
                                        progress)
        except Exception as error:  # the scripted session below does not depend on it
            _say(f"the local model session failed: {type(error).__name__}: {error}")
            _say("continuing with the scripted session")
        _say(f"(local model session: {time.monotonic() - began:.0f} s)")

        conversation, root = await client.new_conversation("Dossier demo: Q3 sales review")

        _section("1. Chat: a multi-step tool loop (list → read CSV → aggregate → write report)")
        first = await client.chat(
            "Which region drove Q3 2026 revenue? Write me a short report.",
            conversation_id=conversation, branch_id=root, model="scripted:analyst", name="Analyst",
            progress=progress)
        _turn(first)

        _section("2. Deferred tool: the model asks the user to pick a file, and waits durably")
        pending = await client.chat("I want to review one of the sales files; let me pick it.",
                                    conversation_id=conversation, branch_id=root, model="scripted:picker",
                                    name="Picker", wait=False)
        waiting = await client.wait_until_waiting(pending.workflow_id)
        _say(f"turn {pending.workflow_id} waits for tool call(s) {', '.join(waiting)}")
        for tool_call_id in waiting:
            await client.answer(tool_call_id, json.dumps({"path": "sales/2026-q2-orders.csv"}))
            _say(f"answered {tool_call_id} with sales/2026-q2-orders.csv")
        _turn(await client.wait_turn(pending))

        _section("3. Branch send: fork at the first question and ask something else there")
        opening = await client.first_user_message(conversation, root)
        branch = await client.fork(conversation, opening, branch_id=root, name="q2-instead")
        _turn(await client.send_on_branch("Same analysis for Q2 2026 instead, please.", conversation_id=conversation,
                                          branch_id=branch, model="scripted:analyst", progress=progress))

        _section("4. Multi-model: two models answer the same message with isolated tool state")
        for outcome in await client.multi("Summarise Q3 2026 revenue by region.",
                                          ["scripted:analyst", "scripted:echo"], conversation_id=conversation,
                                          branch_id=root, progress=progress):
            _turn(outcome)

        _section("5. Subagents: two children work privately; only reports and file handles are promoted")
        batch, batch_id, resume = await client.subagents(
            "Audit both quarters before the board meeting.",
            [("scripted:researcher", "Analyse sales/2026-q3-orders.csv by region."),
             ("scripted:researcher", "Analyse sales/2026-q2-orders.csv by region.")],
            conversation_id=conversation, branch_id=root, progress=progress)
        for child in batch.children:
            _say(f"child {child.workflow_id}: {child.status}, {len(child.promoted_memory_ids)} promoted record(s)")
        if resume is not None:
            _turn(resume)

        _section("6. Discussion: panelists take turns under a moderator directive")
        turns, discussion_id = await client.discuss(
            "Should we shift Q4 marketing budget toward the strongest Q3 region?",
            ["scripted:panelist", "scripted:panelist"], rounds=2,
            directive="Each speaker: at most 2 sentences, cite a source id.", progress=progress)
        for turn in turns:
            _say(f"[{turn.participant}] {turn.answer}")

        _section("7. Scheduled job: a Temporal Schedule fires an agent turn")
        schedule_id = f"demo-digest-{conversation[:8]}"
        await client.schedules.create(schedule_id, "Digest of open support tickets by priority.",
                                     every=timedelta(hours=24), model="scripted:digest",
                                     conversation_id=conversation, branch_id=root)
        await client.schedules.trigger(schedule_id)
        job = await client.schedules.wait_run(schedule_id)
        _say(f"schedule {schedule_id} fired {job.workflow_id}")
        _turn(job)
        await client.schedules.delete(schedule_id)

        _section("Transcript (main branch, as the human sees it)")
        for speaker, text in await client.transcript(conversation, root):
            _say(f"{speaker}: {text}")

        _section("Every model call: full transcript replay vs Dossier's assembled context (tokens)")
        rows = await client.runs.list(conversation)
        _say(f"{'kind':<15} {'participant':<14} {'legacy':>7} {'dossier':>8} {'saved':>6}  workflow")
        for row in rows:
            if row.legacy_tokens is None:
                continue
            saved = 1 - row.assembled_tokens / row.legacy_tokens if row.legacy_tokens else 0.0
            _say(f"{row.runtime_kind:<15} {row.participant[:14]:<14} {row.legacy_tokens:>7} "
                 f"{row.assembled_tokens:>8} {saved:>6.0%}  {row.workflow_id}")
        legacy = sum(r.legacy_tokens or 0 for r in rows)
        assembled = sum(r.assembled_tokens or 0 for r in rows)
        if legacy:
            _say(f"{len(rows)} model calls: {legacy} tokens replayed vs {assembled} assembled "
                 f"({1 - assembled / legacy:.0%} less)")

        _section("Inspect the runs in the Temporal UI")
        for workflow_id in (*local[1:], first.workflow_id, pending.workflow_id, batch_id, discussion_id,
                            job.workflow_id):
            _say(client.ui_url(workflow_id) or workflow_id)
        _say(f"conversation {conversation}; `dossier runs --conversation {conversation}` lists every run")

        _section("Audit trail: what one model call saw, what it did not see and why, and where to read more")
        await audit_trail(client, conversation, _say)
        if args.json:
            print(json.dumps([row.to_json() for row in rows], indent=2))
    return 0
