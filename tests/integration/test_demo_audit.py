"""The demo's closing audit trail, on a real session: explain, why-not, the inspector login, the Temporal search.

A scripted session like the demo's (a tool-loop chat, then a multi-model turn whose
second participant has its own tool state, and a branch forked at the first
question) runs on the real dev server, Postgres and S3 with an in-process worker; :func:`audit_trail` then prints
what `dossier demo` prints at its end, and each printed fact is checked against
the store, the login token's signature and a real visibility query.
"""

from __future__ import annotations

import asyncio
import urllib.parse
import uuid

from temporalio.testing import WorkflowEnvironment

from activities.providers.factory import ModelProviders
from activities.deps import GraphDeps
from dossier.client import DossierClient
from dossier.commands.demo_audit import TELLING, audit_trail, conversation_search
from dossier.inspector.auth import load_secret, verify_token
from dossier.runtime import build_worker
from dossier.settings import Settings
from store import conversations

import pytest

pytestmark = pytest.mark.slow  # the full tier only: runs the whole demo session

VISIBILITY_DEADLINE = 60.0
"""How long a search may take to list a finished run (visibility is eventually consistent): a polling deadline."""
UI = "http://127.0.0.1:8233"


async def test_the_demo_ends_with_the_sessions_audit_trail(temporal_env: WorkflowEnvironment, graph_deps: GraphDeps,
                                                           tmp_path) -> None:
    task_queue = f"demo-audit-{uuid.uuid4().hex[:8]}"
    async with graph_deps.sessions() as session, session.begin():
        account_id = await conversations.create_account(session, name="demo audit")
    settings = Settings(dossier_home=tmp_path, temporal_task_queue=task_queue)
    client = DossierClient(deps=graph_deps, temporal=temporal_env.client, settings=settings, account_id=account_id,
                           ui_base=UI, poll_seconds=0.2)
    async with build_worker(temporal_env.client, graph_deps, task_queue=task_queue,
                            workflow_failure_exception_types=[Exception], providers=ModelProviders()):
        conversation, root = await client.new_conversation("demo audit")
        chat = await client.chat("Which region drove Q3 2026 revenue? Write me a short report.",
                                 conversation_id=conversation, branch_id=root, model="scripted:analyst")
        multi = await client.multi("Summarise Q3 2026 revenue by region.", ["scripted:analyst", "scripted:echo"],
                                   conversation_id=conversation, branch_id=root)
        # A branch forked at the first question, as in the demo: the main branch's later records are not on it.
        branch = await client.fork(conversation, await client.first_user_message(conversation, root),
                                   branch_id=root, name="q2-instead")
        fork = await client.send_on_branch("Same analysis for Q2 2026 instead, please.",
                                           conversation_id=conversation, branch_id=branch, model="scripted:analyst")
        # Subagents whose private work reaches the parent only through what is promoted.
        batch, batch_id, resume = await client.subagents(
            "Audit both quarters before the board meeting.",
            [("scripted:researcher", "Analyse sales/2026-q3-orders.csv by region."),
             ("scripted:researcher", "Analyse sales/2026-q2-orders.csv by region.")],
            conversation_id=conversation, branch_id=root)
    lines: list[str] = []
    trail = await audit_trail(client, conversation, lines.append)
    text = "\n".join(lines)

    # explain: one of this conversation's model runs, in the command's brief human form.
    runs = {row.model_run_id for row in await client.runs.list(conversation)}
    assert trail.model_run_id in runs
    assert f"$ dossier explain {trail.model_run_id}" in text
    assert f"model run     {trail.model_run_id}" in text and "\npolicy        " in text and "== omitted (" in text
    # why-not: a record that run kept out, with the rule and the policy version that decided it.
    assert trail.record_id is not None
    answer = await client.runs.why_not(trail.record_id, trail.model_run_id)
    assert answer.included is False and answer.rule
    assert answer.omission in TELLING, answer  # a rule that separates runs or branches, not a tidy-up
    assert f"$ dossier why-not {trail.record_id} {trail.model_run_id}" in text
    assert f"was NOT included in model run {trail.model_run_id}" in text
    assert f"  rule {answer.rule}" in text and f"  policy version {answer.policy_version}" in text
    # The inspector login URL for this account, signed with this installation's secret.
    assert f"`dossier inspector --url --account {account_id}`" in text and trail.login_url in lines
    base, _, token = trail.login_url.partition("/login?token=")
    assert base == settings.inspector_base_url()  # no inspector service runs in this DOSSIER_HOME
    assert verify_token(load_secret(tmp_path), token) == account_id
    # The Temporal search, and the UI's list filtered by it: it finds the session's workflows.
    search = conversation_search(conversation)
    assert trail.search == search == f'DossierConversationId="{conversation}"' and f"search {search}" in text
    assert trail.search_url == f"{UI}/namespaces/default/workflows?query={urllib.parse.quote_plus(search)}"
    assert trail.search_url in lines
    expected = {chat.workflow_id, fork.workflow_id, batch_id, *(turn.workflow_id for turn in multi),
                *(child.workflow_id for child in batch.children), *([resume.workflow_id] if resume else [])}
    loop = asyncio.get_running_loop()
    deadline = loop.time() + VISIBILITY_DEADLINE
    while True:
        found = {wf.id async for wf in temporal_env.client.list_workflows(search)}
        if expected <= found or loop.time() > deadline:
            break
        await asyncio.sleep(0.5)
    assert expected <= found, (expected, found)
