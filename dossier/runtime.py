"""The composition root: from :class:`Settings` to ready-to-use graph dependencies.

The CLI, the benchmarks and the Temporal worker all connect the same way:
ensure the services (embedded unless an address is configured), migrate the
schema to head with Alembic, make sure the artifact bucket exists, and build a
:class:`GraphDeps` with the tiktoken counter named in the settings.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import replace

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from activities.deps import GraphDeps
from activities.tokens import token_counter
from dossier.services import DEFAULT_SERVICES, Endpoints, ensure_services
from dossier.settings import Settings
from store.artifacts import ArtifactStore
from store.db import create_engine, create_sessionmaker
from store.migrate import upgrade


def artifact_store_for(endpoints: Endpoints, bucket: str | None = None) -> ArtifactStore:
    """The artifact store on the endpoints' S3 service.

    Args:
        endpoints: ensured service endpoints (S3 must be among them).
        bucket: override the configured bucket.

    Returns:
        An :class:`ArtifactStore` (the bucket is not created here).
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

    Ensures the embedded dev server when ``TEMPORAL_ADDRESS`` is unset.
    """
    endpoints = await asyncio.to_thread(ensure_services, settings, ("temporal",))
    if endpoints.temporal_address is None:
        raise ValueError("no Temporal address: ensure the 'temporal' service or set TEMPORAL_ADDRESS")
    return await Client.connect(
        endpoints.temporal_address, namespace=endpoints.temporal_namespace, data_converter=pydantic_data_converter
    )


@asynccontextmanager
async def open_graph(
    settings: Settings,
    *,
    services: Iterable[str] = DEFAULT_SERVICES,
    migrate: bool = True,
    **overrides: object,
) -> AsyncIterator[GraphDeps]:
    """Connect to Postgres and S3 and yield the dependencies every activity uses.

    Args:
        settings: the configuration.
        services: which services to ensure (Postgres and S3 are always needed).
        migrate: run ``alembic upgrade head`` first (idempotent).
        **overrides: fields of :class:`GraphDeps` to replace (policy, catalog, limits...).

    Yields:
        Ready dependencies; the engine is disposed on exit.
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
        deps = GraphDeps(
            sessions=create_sessionmaker(engine),
            artifacts=artifacts,
            counter=token_counter(settings.tiktoken_encoding),
        )
        yield replace(deps, **overrides) if overrides else deps
    finally:
        await engine.dispose()
