"""Fixtures for tests against real services: a fresh database and a fresh bucket.

Each session gets its own database (`dossier_test_<hex16>`) and bucket
(`dossier-test-<hex12>`), created on whichever server `endpoints` points at,
the embedded one or the system Postgres given by `DATABASE_URL`, and removed
at the end, so runs never see each other's data.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import pytest
import pytest_asyncio
from minio import Minio
from minio.deleteobjects import DeleteObject

from dossier.services import Endpoints
from dossier.services.s3 import client as s3_client
from dossier.settings import to_asyncpg_url, with_database

_HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # This hook sees every collected item, not only this folder's: filter by path.
    for item in items:
        if item.path.is_relative_to(_HERE):
            item.add_marker(pytest.mark.integration)


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


# ---------------------------------------------------------------------------------------
# SCHEMA MIGRATION (owner: store/).
#
# The schema is migrated by the `engine` fixture, which runs `alembic upgrade head`
# against `database_url` once per session and yields an AsyncEngine; it lives in
# tests/integration/store/conftest.py. Should tests outside store/ need the migrated
# schema, move that fixture here, in place of this note.
#
# `database_url` is already the `postgresql+asyncpg://` form that SQLAlchemy and
# Alembic's async env.py expect, for the embedded socket URL and DATABASE_URL alike.
# ---------------------------------------------------------------------------------------


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
