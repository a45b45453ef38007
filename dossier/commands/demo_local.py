"""The demo's local-model session: the embedded 1.5B model through the same workflows, tools and graph.

Three short turns in a conversation of their own, each offering the model only
the tool it needs: a listing that answers a question (a real tool call, then an
answer from its result), a deferred file picker the demo answers through the
signal path, and a follow-up on a branch forked after the first answer. Each
step says what the model actually did: a step where it called no tool is
reported as such, never filled in. Then every model call with Dossier's token
count, the provider-reported usage, its duration and its Temporal UI link.

The prompts are what works for this model at temperature 0: a system prompt
that says when to stop calling tools and to quote the result, one simple tool
per turn, a question that names the tool's argument.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from dossier.client import DossierClient, Progress, TurnOutcome
from store import tools as tool_store

SYSTEM = (
    "Call a tool only when you need data you do not have. When a tool result gives you the data, "
    "answer in plain English and do not call the tool again. Quote the numbers from the tool result in your answer."
)
"""Without the second sentence the model calls the tool again; without the third it may not use the result."""

QUESTION = "List the files in sales/ and tell me how many rows sales/2026-q3-orders.csv has."
PICK = "Ask me to pick a sales file."
FOLLOW_UP = "How many rows does sales/2026-q2-orders.csv have?"
"""Answerable from the first listing, which the branch's context carries (the model makes no second call
after a finished exchange anyway: with one in its context it answers, or invents, without calling)."""
PICKED = "sales/2026-q2-orders.csv"
LISTING = ("workspace.list_files",)
PICKER = ("user.pick_file",)


async def _calls(client: DossierClient, outcome: TurnOutcome) -> list[tuple[str, str, str]]:
    """(tool, arguments JSON, status) of each tool call the turn made."""
    ids = outcome.result.tool_call_ids if outcome.result else ()
    async with client.deps.sessions() as session:
        calls = [await tool_store.get_tool_call(session, client.account_id, i) for i in ids]
    return [(call.name, json.dumps(dict(call.arguments)), call.status.value) for call in calls]


async def _report(client: DossierClient, say: Callable[[str], None], outcome: TurnOutcome,
                  wanted: str | None) -> bool:
    """Print what the model did in one turn; returns whether it called ``wanted`` (any tool when ``None``)."""
    status = outcome.result.status if outcome.result else "running"
    calls = await _calls(client, outcome)
    for name, arguments, call_status in calls:
        say(f"    tool call {name}({arguments}) -> {call_status}")
    called = any(wanted in (None, name) for name, _, _ in calls)
    if wanted is not None and not called:
        say(f"    the local model made no {wanted} call in this step: it answered without one (shown as is)")
    elif not calls:
        say("    no tool call in this step: the model answered directly (the branch's context holds the first "
            "turn's listing if that turn made one)")
    say(f"[{outcome.participant}] {outcome.answer or '(' + status + ')'}")
    say(f"    {len(outcome.model_run_ids)} model call(s), turn {status}; workflow {outcome.workflow_id}")
    return called


async def local_session(client: DossierClient, model: str, say: Callable[[str], None],
                        progress: Progress | None = None) -> Sequence[str]:
    """Run the local-model turns; returns the conversation id and the workflow ids to inspect."""
    conversation, root = await client.new_conversation("Dossier demo: a local model")

    say("-- a question the model answers from one tool call (offered: workspace.list_files)")
    say(f"> {QUESTION}")
    first = await client.chat(QUESTION, conversation_id=conversation, branch_id=root, model=model, name="Local",
                              tools=LISTING, system_prompt=SYSTEM, progress=progress)
    await _report(client, say, first, "workspace.list_files")

    say("-- a deferred tool: the model asks the user to pick a file (offered: user.pick_file; a conversation of "
        "its own)")
    say(f"> {PICK}")
    # With the first exchange in its context the model answers the earlier question again after the pick.
    pick_conversation, pick_root = await client.new_conversation("Dossier demo: a local model asks for a file")
    pending = await client.chat(PICK, conversation_id=pick_conversation, branch_id=pick_root, model=model,
                                name="Local picker", tools=PICKER, system_prompt=SYSTEM, wait=False)
    waiting = await client.wait_until_waiting(pending.workflow_id, timeout=900, or_done=True)
    for tool_call_id in waiting:
        await client.answer(tool_call_id, json.dumps({"path": PICKED}))
        say(f"    turn waited durably on {tool_call_id}; the demo answered it with {PICKED}")
    await _report(client, say, await client.wait_turn(pending, progress), "user.pick_file")

    say("-- a follow-up on a branch forked after the first answer (same participant and tools; the picker "
        "exchange is not on it)")
    at = first.result.message_id if first.result and first.result.message_id else \
        await client.first_user_message(conversation, root)
    branch = await client.fork(conversation, at, branch_id=root, name="local follow-up")
    say(f"> {FOLLOW_UP}")
    follow = await client.send_on_branch(FOLLOW_UP, conversation_id=conversation, branch_id=branch, model=model,
                                         name="Local", progress=progress)
    await _report(client, say, follow, None)

    say("-- every local model call: Dossier's assembled context vs the provider-reported usage")
    rows = sorted([*await client.runs.list(conversation), *await client.runs.list(pick_conversation)],
                  key=lambda row: row.started_at)
    say(f"{'kind':<12} {'participant':<13} {'legacy':>6} {'dossier':>7} {'prov in':>7} {'cached':>6} "
        f"{'prov out':>8} {'seconds':>7}  temporal ui")
    for row in rows:
        usage = row.usage
        say(f"{row.runtime_kind:<12} {row.participant[:13]:<13} {row.legacy_tokens or 0:>6} "
            f"{row.assembled_tokens or 0:>7} {_n(usage.get('input_tokens')):>7} "
            f"{_n(usage.get('cache_read_tokens')):>6} {_n(usage.get('output_tokens')):>8} "
            f"{_seconds(row.seconds):>7}  {row.ui_url or row.workflow_id}")
    total = sum(row.seconds or 0.0 for row in rows)
    say(f"{len(rows)} local model call(s), {total:.0f} s in all; conversations {conversation}, {pick_conversation}")
    return (conversation, first.workflow_id, pending.workflow_id, follow.workflow_id)


def _n(value: int | None) -> str:
    return "-" if value is None else str(value)


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


__all__ = ["FOLLOW_UP", "PICK", "PICKED", "QUESTION", "SYSTEM", "local_session"]
