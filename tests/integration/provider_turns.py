"""Agent turns whose ``openai:`` model is the scripted HTTP test server (:mod:`provider_server`)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace

from temporalio.testing import WorkflowEnvironment

from activities.deps import GraphDeps
from activities.tools.registry import ToolRegistry
from dossier.client import DossierClient
from dossier.runtime import build_worker, model_providers
from dossier.settings import Settings
from provider_server import ProviderServer
from store import conversations


@asynccontextmanager
async def provider_dossier(temporal_env: WorkflowEnvironment, graph_deps: GraphDeps, server: ProviderServer,
                           name: str, tools: ToolRegistry | None = None) -> AsyncIterator[DossierClient]:
    """A client of a new account and an in-process worker whose ``openai:`` models are ``server``.

    Args:
        name: the account's name and the task queue's prefix.
        tools: the worker's registry (default: the built-in tools).
    """
    deps = graph_deps if tools is None else replace(graph_deps, catalog=tools.catalog())
    task_queue = f"{name.replace(' ', '-')}-{uuid.uuid4().hex[:8]}"
    async with deps.sessions() as session, session.begin():
        account_id = await conversations.create_account(session, name=name)
    settings = Settings(temporal_task_queue=task_queue, openai_base_url=server.openai_url,
                        openai_api_key="sk-test")  # type: ignore[arg-type] - pydantic makes it a SecretStr
    providers = model_providers(settings)
    worker = build_worker(temporal_env.client, deps, task_queue=task_queue, tools=tools, providers=providers,
                          workflow_failure_exception_types=[Exception])
    client = DossierClient(deps=deps, temporal=temporal_env.client, settings=settings, account_id=account_id,
                           poll_seconds=0.2)
    try:
        async with worker:
            yield client
    finally:
        await providers.aclose()
