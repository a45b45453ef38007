"""An agent from an agents file, end to end: its tool module registered by the worker, its name taken for a model.

The worker gets the registry :func:`dossier.runtime.agent_tools` builds (built-in
tools plus ``examples.tools_example``); the client creates the agent's
participant with the agent's model, system prompt and stored definition, and
the turn runs on the scripted model the agent names.
"""

from __future__ import annotations

import re

import json
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from temporalio.testing import ActivityEnvironment, WorkflowEnvironment

from activities.providers.factory import ModelProviders
from activities.providers.windows import ContextWindows
from activities.ingest import begin_tool_call
from activities.tokens import token_counter
from activities.tools.registry import default_registry
from activities.turns import TurnActivities
from contracts import AssembleInput, Scope, ToolCallInput
from dossier.client import DossierClient
from dossier.runtime import SAMPLE_WORKSPACE, agent_tools, build_worker, graph_deps
from dossier.settings import Settings
from policy.enums import MessageRole, RuntimeKind, ToolCallStatus
from store import assemblies, conversations, messages
from store import tools as tool_store
from store.artifacts import ArtifactStore
from store.writes import NewMessage, NewToolCall

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]

AGENTS = """
[agents.helper]
model = "scripted:analyst"
system_prompt = "You are Helper. Convert units when asked."
tools = ["workspace.list_files", "workspace.read_csv", "table.aggregate", "files.write", "examples.convert_units"]
tool_modules = ["examples.tools_example"]
token_budget = 9000
route = { allowed = ["public", "user"], raw_allowed = ["public"] }

[agents.narrow]
model = "scripted:analyst"
tools = ["workspace.list_files"]
"""


async def test_an_agents_participant_and_its_tool_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, temporal_env: WorkflowEnvironment,
    sessions: async_sessionmaker[AsyncSession], artifact_store: ArtifactStore,
) -> None:
    (tmp_path / "agents.toml").write_text(AGENTS)
    monkeypatch.chdir(REPO)  # examples.tools_example imports from the working directory, as in the worker
    task_queue = f"dossier-agents-{uuid.uuid4().hex[:8]}"
    settings = Settings(_env_file=None, temporal_task_queue=task_queue, dossier_agents_file=tmp_path / "agents.toml")
    agents, tools = agent_tools(settings)
    assert "examples.convert_units" in tools
    deps = graph_deps(sessions, artifact_store, token_counter(), tools=tools)
    assert deps.catalog.spec("examples.convert_units").privacy.value == "public"
    async with deps.sessions() as session, session.begin():
        account_id = await conversations.create_account(session, name="agents test")
    worker = build_worker(temporal_env.client, deps, task_queue=task_queue, tools=tools,
                          workflow_failure_exception_types=[Exception], providers=ModelProviders())
    client = DossierClient(deps=deps, temporal=temporal_env.client, settings=settings, account_id=account_id,
                           poll_seconds=0.2, agents=agents)
    async with worker:
        outcome = await client.chat("Which region drove Q3 2026 revenue?", model="helper")
        narrow = await client.chat("Which region drove Q3 2026 revenue?", model="narrow")
    assert outcome.answer and outcome.participant == "Helper"
    async with deps.sessions() as session:
        row = (await session.execute(text(
            "SELECT provider, model, system_prompt, config FROM participants WHERE id = :id"),
            {"id": outcome.participant_id})).one()
    provider, model, system_prompt, config = row
    assert (provider, model, system_prompt) == ("scripted", "analyst", "You are Helper. Convert units when asked.")
    config = config if isinstance(config, dict) else json.loads(config)
    assert config["agent"] == "helper" and config["token_budget"] == 9000
    assert config["tools"][-1] == "examples.convert_units"
    assert config["route"] == {"allowed": ["public", "user"], "raw_allowed": ["public"]}
    async with deps.sessions() as session:
        calls = (await session.execute(text(
            "SELECT name, status FROM tool_calls WHERE participant_id = :id"),
            {"id": narrow.participant_id})).all()
    # The scripted model calls only what it is offered: the allow-list's one tool.
    assert calls and {name for name, _ in calls} == {"workspace.list_files"}
    async with deps.sessions() as session:
        helper_calls = set((await session.scalars(text("SELECT name FROM tool_calls WHERE participant_id = :id"),
                                                  {"id": outcome.participant_id})).all())
    assert len(helper_calls) > 1  # the wider agent used more than one tool
    async with deps.sessions() as session:
        budgets = (await session.execute(text(  # the budget, tool definitions included (they take their share)
            "SELECT a.participant_id = :helper, substring(d.reason from 'take \\d+ of the (\\d+) tokens')::int "
            "FROM context_assemblies a JOIN policy_decisions d ON d.context_assembly_id = a.id "
            "AND d.subject_ref = 'tools:offered' WHERE a.participant_id IN (:helper, :narrow)"),
            {"helper": outcome.participant_id, "narrow": narrow.participant_id})).all()
        notes = (await session.scalars(text(
            "SELECT d.reason FROM policy_decisions d JOIN context_assemblies a ON a.id = d.context_assembly_id "
            "WHERE a.participant_id = :id AND d.kind = 'route'"), {"id": outcome.participant_id})).all()
        narrow_notes = (await session.scalar(text(
            "SELECT count(*) FROM policy_decisions d JOIN context_assemblies a ON a.id = d.context_assembly_id "
            "WHERE a.participant_id = :id AND d.kind = 'route'"), {"id": narrow.participant_id}))
    # The agent's token_budget is every assembly's budget; an agent without one gets the policy's.
    assert {budget for helper, budget in budgets if helper} == {9000}
    assert {budget for helper, budget in budgets if not helper} == {8192}
    # Its route narrows the scripted route in every assembly; the agent without a route is not narrowed.
    assert notes and set(notes) == {"the agent's route narrows it to public, user (raw: public)"}
    assert narrow_notes == 0


async def test_execute_tool_refuses_a_tool_outside_the_allow_list_without_running_it(
    sessions: async_sessionmaker[AsyncSession], artifact_store: ArtifactStore,
) -> None:
    deps = graph_deps(sessions, artifact_store, token_counter())
    async with deps.sessions() as session, session.begin():
        account_id = await conversations.create_account(session, name="allow-list test")
        conversation = await conversations.create_conversation(session, account_id, title="allow-list")
        participant = await conversations.add_participant(
            session, account_id, conversation.id, name="Narrow", provider="scripted", model="analyst",
            config={"agent": "narrow", "tools": ["workspace.list_files"]})
    calls = []
    for key, name in (("refused", "workspace.read_csv"), ("allowed", "workspace.list_files")):
        calls.append(await begin_tool_call(
            deps, account_id, conversation.id, NewToolCall(
                branch_id=conversation.root_branch_id, participant_id=participant.id, call_id=f"call_{key}", name=name,
                arguments={}, runtime_kind=RuntimeKind.CHAT, at=datetime.now(UTC))))
    activities = TurnActivities(deps=deps, tools=default_registry(), workspace=SAMPLE_WORKSPACE,
                                providers=ModelProviders())
    refused, allowed = [await ActivityEnvironment().run(activities.execute_tool,
                                                        ToolCallInput(account_id=account_id, tool_call_id=call.id))
                        for call in calls]
    assert (refused.status, allowed.status) == ("failed", "succeeded")
    async with deps.sessions() as session:
        row = await tool_store.get_tool_call(session, account_id, refused.tool_call_id)
    assert row.status is ToolCallStatus.FAILED and row.attempts == 1
    assert "'workspace.read_csv' is not offered to Narrow; offered: workspace.list_files" in (row.last_error or "")


async def test_a_participants_budget_follows_its_models_window_unless_its_agent_sets_one(
    sessions: async_sessionmaker[AsyncSession], artifact_store: ArtifactStore,
) -> None:
    deps = graph_deps(sessions, artifact_store, token_counter())
    async with deps.sessions() as session, session.begin():
        account_id = await conversations.create_account(session, name="window budgets")
        conversation = await conversations.create_conversation(session, account_id, title="windows")
        participants = {
            name: await conversations.add_participant(session, account_id, conversation.id, name=name,
                                                      provider=provider, model=model, config=config)
            for name, provider, model, config in (
                ("Local", "local", "qwen2.5-coder-1.5b-instruct", {}),
                ("Hosted", "anthropic", "claude-sonnet-4-5", {}),
                ("Capped", "anthropic", "claude-sonnet-4-5", {"agent": "capped", "token_budget": 9000}),
                ("Unknown", "openai", "some-new-model", {}),
            )}
        await messages.append_message(session, account_id, conversation.id, NewMessage(
            branch_id=conversation.root_branch_id, role=MessageRole.USER, content="hello"))
    activities = TurnActivities(deps=deps, tools=default_registry(), workspace=SAMPLE_WORKSPACE,
                                providers=ModelProviders(), windows=ContextWindows(local_window=8192))
    scope = Scope(account_id=account_id, conversation_id=conversation.id, branch_id=conversation.root_branch_id)
    budgets = {}
    for name, participant in participants.items():
        async with deps.sessions() as session, session.begin():
            run = await messages.start_model_run(session, account_id, conversation.id, conversation.root_branch_id,
                                                 participant.id, runtime_kind=RuntimeKind.CHAT,
                                                 provider=participant.provider)
        assembled = await ActivityEnvironment().run(activities.assemble_context, AssembleInput(
            scope=scope, participant_id=participant.id, model_run_id=run.id, assembly_id=str(uuid.uuid4()),
            runtime_kind=RuntimeKind.CHAT, now=datetime.now(UTC)))
        async with deps.sessions() as session:
            stored = await assemblies.get_context_assembly(session, account_id, assembled.assembly_id)
        [tools] = [d for d in stored.decisions if d.subject_ref == "tools:offered"]
        taken, whole = map(int, re.search(r"take (\d+) of the (\d+) tokens", tools.reason).groups())
        assert taken > 0 and stored.record.token_budget == whole - taken
        budgets[name] = whole
    # Half the local server's 8k window; half a 200k window capped at 32k; the agent's own; the policy's.
    # Each budget covers the tool definitions offered with the call too: the context gets the rest.
    assert budgets == {"Local": 4096, "Hosted": 32_768, "Capped": 9000, "Unknown": 8192}, budgets
