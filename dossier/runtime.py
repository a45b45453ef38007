"""The composition root: from :class:`Settings` to a connected runtime.

The worker process, the client, the CLI and the benchmarks all connect the
same way, through this module and nothing else:

1. ensure the services (embedded unless an address is configured);
2. migrate the schema to head with Alembic and make sure the bucket exists;
3. build :class:`~activities.deps.GraphDeps` with the tiktoken counter named
   in the settings and the policy metadata of the tool registry in force;
4. build the model providers from the settings' endpoints and keys
   (:func:`model_providers`): activities never read the settings themselves;
5. for a worker, register every workflow and activity on the task queue, with the
   built-in tools plus the ``@tool`` functions of the ``tool_modules`` the agents
   file names (:func:`agent_tools`; a module that fails to import stops the start)
   and the tools of the MCP servers they declare (:func:`agent_mcp_servers`; a
   server that cannot start stops the start too).

Nothing here runs at import time. ``worker.py`` (and ``dossier worker``) call
:func:`run_worker`; nothing imports ``worker.py``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import SecretStr
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Worker

from activities.deps import GraphDeps
from activities.providers.base import ProviderFactory
from activities.providers.config import DEFAULT_REQUEST_TIMEOUT_SECONDS, EndpointConfig, ProvidersConfig
from activities.providers.factory import ModelProviders
from activities.providers.windows import ContextWindows
from activities.tokens import token_counter
from activities.skills import SkillLibrary, load_skills
from activities.tools.base import RegisteredTool
from activities.tools.registry import ToolRegistry, default_registry
from activities.turns import TurnActivities
from activities.retention import RetentionActivities
from dossier.agents import AgentsFile, agents_for
from dossier.retention import ensure_retention_schedule
from dossier.services import DEFAULT_SERVICES, Endpoints, ensure_services
from dossier.settings import Settings
from dossier.telemetry import configure_tracing, has_tracing, serve_worker_metrics, tracing_interceptor
from dossier.visibility import ensure_search_attributes
from dossier.tools import registry_with
from policy.tokens import TokenCounter
from store.artifacts import ArtifactStore
from store.db import create_engine, create_sessionmaker
from store.migrate import upgrade
from workflows import ALL_WORKFLOWS

if TYPE_CHECKING:
    from activities.tools.mcp import McpServers

logger = logging.getLogger(__name__)

SAMPLE_WORKSPACE = Path(__file__).parent / "workspace"
"""The sample dataset shipped with Dossier: the folder the workspace tools read by default."""


def graph_deps(
    sessions: async_sessionmaker[AsyncSession],
    artifacts: ArtifactStore,
    counter: TokenCounter,
    *,
    tools: ToolRegistry | None = None,
    **overrides: object,
) -> GraphDeps:
    """The dependencies every I/O step needs, with the tool registry's policy metadata.

    Args:
        sessions: the Postgres session factory.
        artifacts: the artifact store.
        tools: the tool registry in force (default: :func:`default_registry`); its
            catalog is what capture and derivation read a tool's privacy and freshness from.
        **overrides: other :class:`GraphDeps` fields (policy, limits, inline_max_bytes).
    """
    registry = tools or default_registry()
    return GraphDeps(sessions=sessions, artifacts=artifacts, counter=counter, catalog=registry.catalog(),
                     **overrides)  # type: ignore[arg-type]


REQUEST_TIMEOUT_SHARE = 0.9
"""A model request's HTTP timeout, as a share of the model call's activity timeout: the request gives
up first, as a retryable timeout of ours, instead of Temporal timing the whole attempt out."""


def providers_config(settings: Settings) -> ProvidersConfig:
    """The model endpoints the settings configure (keys, base URLs, the local model server, timeouts).

    Args:
        settings: the configuration (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``, ``ANTHROPIC_API_KEY``,
            ``ANTHROPIC_BASE_URL``, ``LOCAL_MODEL_URL`` (set for the worker by ``dossier services up`` when the
            embedded model runs), ``MODEL_TIMEOUT_SECONDS``).

    Returns:
        The configuration :class:`~activities.providers.factory.ModelProviders` takes.
    """
    timeout = (settings.model_timeout_seconds * REQUEST_TIMEOUT_SHARE if settings.model_timeout_seconds
               else DEFAULT_REQUEST_TIMEOUT_SECONDS)
    return ProvidersConfig(
        openai=EndpointConfig(base_url=settings.openai_base_url, api_key=settings.openai_api_key,
                              timeout_seconds=timeout),
        anthropic=EndpointConfig(base_url=settings.anthropic_base_url, api_key=settings.anthropic_api_key,
                                 timeout_seconds=timeout),
        local_base_url=settings.local_model_url,
        local=ProvidersConfig().local.model_copy(update={"timeout_seconds": timeout}),
    )


def model_providers(settings: Settings) -> ModelProviders:
    """Model spec -> provider, over the endpoints the settings configure (see :func:`providers_config`)."""
    return ModelProviders(providers_config(settings))


def agent_tools(settings: Settings, mcp_tools: Iterable[RegisteredTool] = (),
                agents: AgentsFile | None = None) -> tuple[AgentsFile, ToolRegistry]:
    """The agents file in force and the tool registry it implies.

    The registry is the built-in tools plus the ``@tool`` functions of every module the
    agents list under ``tool_modules``, plus ``mcp_tools`` (the connected MCP servers' tools,
    :func:`agent_mcp_servers`); each agent's ``tools`` allow-list must name registered tools
    (or tools of its own MCP servers).

    Args:
        settings: the configuration (``DOSSIER_AGENTS_FILE``).
        mcp_tools: the MCP servers' tools, once connected.
        agents: the agents file, when already read.

    Raises:
        AgentsFileError: a missing or bad agents file, or an allow-list naming an unknown tool.
        ToolModuleError: a tool module failed to import.
        ValueError: a tool clashes with another's name or has an invalid schema.
    """
    agents = agents or agents_for(settings.dossier_agents_file)
    registry = registry_with(agents.tool_modules(), extra=mcp_tools, search_path=[Path.cwd()])
    agents.check_tools(registry.names())
    return agents, registry


def agent_skills(settings: Settings, agents: AgentsFile, tools: ToolRegistry) -> SkillLibrary:
    """The skills folder in force, read and checked: ``DOSSIER_SKILLS_DIR``, else the agents file's ``skills_dir``.

    Every skill's ``tools`` must be registered and every agent's ``skills`` must be in the folder,
    so a typo stops the worker at start instead of silently granting or hiding a tool mid-run.

    Raises:
        SkillFileError: a missing folder, a bad ``SKILL.md`` (file and line) or a skill granting an unknown tool.
        AgentsFileError: an agent naming a skill the folder does not have.
    """
    folder = settings.dossier_skills_dir or agents.skills_dir
    library = load_skills(folder, tools.names()) if folder is not None else SkillLibrary()
    agents.check_skills(library.skills)
    return library


def check_agent_skills(settings: Settings, agents: AgentsFile) -> None:
    """Refuse an agent naming a skill the skills folder in force lacks (what a client checks; the worker
    also checks every skill's tools, :func:`agent_skills`).

    Raises:
        SkillFileError: a configured skills folder that is missing, or a bad ``SKILL.md``.
        AgentsFileError: an agent naming a skill the folder does not have, or naming skills with no folder.
    """
    folder = settings.dossier_skills_dir or agents.skills_dir
    agents.check_skills(load_skills(folder, None).skills if folder is not None else ())


@asynccontextmanager
async def agent_mcp_servers(agents: AgentsFile, environ: Mapping[str, str] | None = None) -> AsyncIterator[McpServers]:
    """Connect to every MCP server the agents declare, for as long as the block runs (see :mod:`activities.tools.mcp`).

    Args:
        environ: where ``env_from`` variables are read (default ``os.environ``).

    Yields:
        The servers' tools (none when no agent declares a server; the SDK is then never loaded).

    Raises:
        AgentsFileError: two agents define a server of the same name differently.
        McpServerError: a server that cannot start or list its tools: the worker does not start.
    """
    from activities.tools.mcp import McpServers, connect_mcp_servers  # the SDK loads only when it is used

    configs = [server.config(environ) for server in agents.mcp_servers()]
    if not configs:
        yield McpServers()
        return
    async with connect_mcp_servers(configs) as connected:
        logger.info("MCP servers connected: %s (%d tool(s))", ", ".join(c.name for c in configs),
                    len(connected.tools))
        yield connected


def agent_endpoints(agents: AgentsFile, environ: Mapping[str, str] | None = None) -> dict[str, EndpointConfig]:
    """Each agent's own endpoint (``endpoint`` in the agents file), its key read from the variable it names.

    A variable that is unset gives no key (the call then fails as an unconfigured provider, naming it),
    so one agent's missing key does not stop the worker serving the others.

    Args:
        environ: the environment (default ``os.environ``).

    Returns:
        Agent name -> endpoint override (only agents with an ``endpoint`` table).
    """
    environ = os.environ if environ is None else environ
    found: dict[str, EndpointConfig] = {}
    for name, agent in agents.agents.items():
        if agent.endpoint is None:
            continue
        fields: dict[str, object] = {}
        if agent.endpoint.base_url is not None:
            fields["base_url"] = agent.endpoint.base_url
        if agent.endpoint.api_key_env is not None:
            key = environ.get(agent.endpoint.api_key_env)
            if key:
                fields["api_key"] = SecretStr(key)
            else:
                logger.warning("agent %s: %s is not set; its model calls get no key of their own",
                               name, agent.endpoint.api_key_env)
        if fields:
            found[name] = EndpointConfig(**fields)  # type: ignore[arg-type]
    return found


def artifact_store_for(endpoints: Endpoints, bucket: str | None = None) -> ArtifactStore:
    """The artifact store on the endpoints' S3 service.

    Args:
        endpoints: ensured service endpoints (S3 must be among them).
        bucket: override the configured bucket.

    Returns:
        An :class:`ArtifactStore` (the bucket is not created here).

    Raises:
        ValueError: no S3 endpoint.
    """
    if endpoints.s3_endpoint is None:
        raise ValueError("no S3 endpoint: ensure the 's3' service or set S3_ENDPOINT")
    return ArtifactStore(
        endpoint=endpoints.s3_endpoint,
        access_key=endpoints.s3_access_key,
        secret_key=endpoints.s3_secret_key,
        region=endpoints.s3_region,
        secure=endpoints.s3_secure,
        bucket=bucket or endpoints.s3_bucket,
    )


async def temporal_client(settings: Settings) -> Client:
    """A Temporal client for the configured (or embedded) server, with the pydantic converter.

    Ensures the embedded dev server when ``TEMPORAL_ADDRESS`` is unset, and Dossier's search attributes on it.

    Raises:
        ValueError: no Temporal address.
        SearchAttributesMissingError: the namespace lacks the search attributes and would not register them.
    """
    endpoints = await asyncio.to_thread(ensure_services, settings, ("temporal",))
    if endpoints.temporal_address is None:
        raise ValueError("no Temporal address: ensure the 'temporal' service or set TEMPORAL_ADDRESS")
    client = await Client.connect(
        endpoints.temporal_address, namespace=endpoints.temporal_namespace, data_converter=pydantic_data_converter,
        # Client spans (StartWorkflow) parent the workflow's; a worker built on this client inherits it.
        interceptors=[tracing_interceptor()],
    )
    await ensure_search_attributes(client, endpoints.temporal_namespace)
    return client


@asynccontextmanager
async def open_graph(
    settings: Settings,
    *,
    services: Iterable[str] = DEFAULT_SERVICES,
    migrate: bool = True,
    tools: ToolRegistry | None = None,
    **overrides: object,
) -> AsyncIterator[GraphDeps]:
    """Connect to Postgres and S3 and yield the dependencies every activity uses.

    Args:
        services: which services to ensure (Postgres and S3 are always needed).
        migrate: run ``alembic upgrade head`` first (idempotent).
        tools: the tool registry in force (default: :func:`default_registry`).
        **overrides: fields of :class:`GraphDeps` to replace (policy, limits, inline_max_bytes...).

    Yields:
        Ready dependencies; the engine is disposed on exit.

    Raises:
        ValueError: no database or S3 endpoint.
    """
    wanted = tuple(dict.fromkeys((*DEFAULT_SERVICES, *services)))
    # ensure_services blocks (it may start processes and wait for ports): keep the loop free.
    endpoints = await asyncio.to_thread(ensure_services, settings, wanted)
    url = endpoints.sqlalchemy_url
    if url is None:
        raise ValueError("no database: ensure the 'postgres' service or set DATABASE_URL")
    if migrate:
        await asyncio.to_thread(upgrade, url)  # upgrade() runs its own event loop
    artifacts = artifact_store_for(endpoints)
    await artifacts.ensure_bucket()
    engine = create_engine(url)
    try:
        deps = graph_deps(create_sessionmaker(engine), artifacts, token_counter(settings.tiktoken_encoding),
                          tools=tools)
        yield replace(deps, **overrides) if overrides else deps
    finally:
        await engine.dispose()


def build_worker(
    client: Client,
    deps: GraphDeps,
    *,
    task_queue: str,
    tools: ToolRegistry | None = None,
    providers: ProviderFactory,
    workspace: Path = SAMPLE_WORKSPACE,
    agent_endpoints: Mapping[str, EndpointConfig] | None = None,
    workflow_failure_exception_types: Sequence[type[BaseException]] = (),
    skills: SkillLibrary | None = None,
    windows: ContextWindows | None = None,
) -> Worker:
    """A worker with every Dossier workflow and activity registered.

    Args:
        client: a Temporal client using the pydantic data converter.
        deps: graph dependencies from :func:`open_graph` or :func:`graph_deps`.
        task_queue: the task queue to poll.
        tools: the tool registry (default: :func:`default_registry`); ``deps`` must
            have been built for it.
        providers: model spec -> provider.
        workspace: the data folder the workspace tools read.
        agent_endpoints: agent name -> its own endpoint (:func:`agent_endpoints`).
        workflow_failure_exception_types: fail workflows (not just tasks) on these (tests).
        skills: the skills folder's skills (:func:`agent_skills`; default: none).
        windows: model -> context window, for budgets (default: the hosted models', no local one).

    Returns:
        The worker, not yet running.

    Raises:
        ValueError: ``deps`` lacks the policy metadata of a registered tool.
    """
    tools = tools or default_registry()
    missing = sorted({tool.name for tool in tools} - {spec.name for spec in deps.catalog.tools})
    if missing:
        raise ValueError(f"the graph dependencies were built without the specs of {missing}: "
                         "build them with dossier.runtime.graph_deps(tools=...) or open_graph(tools=...)")
    activities = TurnActivities(deps=deps, tools=tools, workspace=workspace, providers=providers,
                                agent_endpoints=dict(agent_endpoints or {}), skills=skills or SkillLibrary(),
                                windows=windows or ContextWindows())
    return Worker(
        client,
        task_queue=task_queue,
        workflows=ALL_WORKFLOWS,
        activities=[*activities.all(), *RetentionActivities(deps).all()],
        workflow_failure_exception_types=list(workflow_failure_exception_types),
        # The SDK's tracing interceptor, unless the client carries it already (the worker inherits the client's).
        # Activity retries counted into the worker's metrics (activities.metrics.RetryCounting).
        interceptors=[deps.metrics.interceptor(), *([] if has_tracing(client) else [tracing_interceptor()])],
    )


async def run_worker(settings: Settings) -> None:
    """Connect everything and poll until SIGINT or SIGTERM, then drain and stop.

    Raises:
        AgentsFileError: a bad agents file, or an agent naming an unknown skill (before any service is touched).
        ToolModuleError: a tool module the agents file names failed to import.
        SkillFileError: a bad skill file in the skills folder.
        McpServerError: an MCP server the agents declare cannot start or list its tools.
        MetricsPortError: ``METRICS_PORT`` is set and taken, or ``METRICS_ADDRESS`` cannot be bound.
    """
    agents, tools = agent_tools(settings)  # a bad file or tool module stops the start before any server runs
    tracer_provider = configure_tracing(settings)
    async with agent_mcp_servers(agents) as mcp, AsyncExitStack() as stack:
        if tracer_provider is not None:
            stack.callback(tracer_provider.shutdown)  # flushes the last spans at exit
        if mcp.tools:
            agents, tools = agent_tools(settings, mcp.tools, agents)
        # Skills are checked against every tool, MCP tools included: a skill may grant one.
        skills = agent_skills(settings, agents, tools)
        if agents.agents:
            logger.info("agents file %s: %d agent(s), %d tool(s)", agents.path, len(agents.agents), len(tools))
        if skills.skills:
            logger.info("skills folder %s: %s", skills.folder, ", ".join(sorted(skills.skills)))
        # The graph needs the MCP tools' specs, known only once the servers are connected.
        deps = await stack.enter_async_context(
            open_graph(settings, services=("postgres", "s3", "temporal"), tools=tools))
        client = await temporal_client(settings)
        serve_worker_metrics(settings, deps.metrics.registry)
        providers = model_providers(settings)
        worker = build_worker(client, deps, task_queue=settings.temporal_task_queue, tools=tools,
                              providers=providers, agent_endpoints=agent_endpoints(agents), skills=skills,
                              windows=ContextWindows(local_window=settings.local_model_context))
        # The garbage collection runs as a Temporal Schedule; creating it again is a no-op.
        await ensure_retention_schedule(client, settings.temporal_task_queue)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        # The embedded worker service waits for this line (dossier.services.worker.READY_LINE).
        logger.info("worker polling %s on %s", settings.temporal_task_queue, client.service_client.config.target_host)
        try:
            async with worker:
                await stop.wait()
        finally:
            await providers.aclose()
        logger.info("worker stopped")


__all__ = [
    "SAMPLE_WORKSPACE",
    "agent_endpoints",
    "agent_skills",
    "check_agent_skills",
    "agent_mcp_servers",
    "agent_tools",
    "artifact_store_for",
    "build_worker",
    "graph_deps",
    "model_providers",
    "open_graph",
    "providers_config",
    "run_worker",
    "temporal_client",
]
