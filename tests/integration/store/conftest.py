"""Fixtures for the store's integration tests: a migrated database and a bucket.

The session-wide services come from ``tests/integration/conftest.py``:
``database_url`` (a fresh database, ``postgresql+asyncpg://``), ``s3_bucket``
(a fresh bucket), ``endpoints`` (S3 endpoint and credentials) and ``s3`` (a
raw minio client). Each test works in its own account (the ``world``
fixture), so tests never see each other's rows.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from dossier.services import Endpoints
from store import graph
from store.artifacts import ArtifactStore
from store.db import create_engine, create_sessionmaker
from store.migrate import upgrade
from storeworld import World


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


@pytest.fixture
async def world(sessions: async_sessionmaker[AsyncSession]) -> World:
    """A fresh account and conversation for one test."""
    async with sessions() as session, session.begin():
        account_id = await graph.create_account(session, name="test")
        conversation = await graph.create_conversation(session, account_id, title="t")
        user = await graph.add_participant(session, account_id, conversation.id, name="User", role="user")
        assistant = await graph.add_participant(
            session, account_id, conversation.id, name="Analyst", provider="scripted", model="m"
        )
    return World(
        account_id=account_id,
        conversation_id=conversation.id,
        root_branch_id=conversation.root_branch_id,
        user_id=user.id,
        assistant_id=assistant.id,
        sessions=sessions,
    )
