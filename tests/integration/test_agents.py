"""An agent from an agents file, end to end: its tool module registered by the worker, its name taken for a model.

The worker gets the registry :func:`dossier.runtime.agent_tools` builds (built-in
tools plus ``examples.tools_example``); the client creates the agent's
participant with the agent's model, system prompt and stored definition, and
the turn runs on the scripted model the agent names.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from temporalio.testing import WorkflowEnvironment

from activities.tokens import token_counter
from dossier.client import DossierClient
from dossier.runtime import agent_tools, build_worker, graph_deps
from dossier.settings import Settings
from store import conversations
from store.artifacts import ArtifactStore

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
                          workflow_failure_exception_types=[Exception])
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
