"""Library failures reach callers as store errors, sorted into transient and permanent."""

from __future__ import annotations

import socket

import pytest

from store import graph
from store.artifacts import ArtifactStore, object_key
from store.db import create_engine, create_sessionmaker
from store.errors import ArtifactStoreError, ArtifactStoreUnavailableError, TransientStoreError

pytestmark = pytest.mark.integration


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_unreachable_database_is_transient() -> None:
    engine = create_engine(f"postgresql://nobody@127.0.0.1:{_closed_port()}/none", pool_pre_ping=False)
    try:
        async with create_sessionmaker(engine)() as session:
            with pytest.raises(TransientStoreError):
                await graph.get_conversation(session, "a", "c")
    finally:
        await engine.dispose()


async def test_unreachable_s3_is_transient() -> None:
    store = ArtifactStore(
        endpoint=f"127.0.0.1:{_closed_port()}", access_key="k", secret_key="s", bucket="no-bucket", secure=False
    )
    with pytest.raises(ArtifactStoreUnavailableError) as caught:
        await store.put("acct", b"x")
    assert isinstance(caught.value, TransientStoreError)


async def test_wrong_credentials_are_permanent(endpoints, s3_bucket: str) -> None:  # noqa: ANN001
    store = ArtifactStore(
        endpoint=endpoints.s3_endpoint, access_key=endpoints.s3_access_key, secret_key="wrong",
        region=endpoints.s3_region, secure=endpoints.s3_secure, bucket=s3_bucket,
    )
    with pytest.raises(ArtifactStoreError) as caught:
        await store.get("acct", object_key("acct", "0" * 64), "0" * 64)
    assert not isinstance(caught.value, TransientStoreError)
