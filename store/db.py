"""Engine and session factories. Nothing here runs at import time.

The composition root (:mod:`dossier.runtime`) builds one engine and one session
factory and hands the factory to whoever needs it; store functions take the
caller's ``AsyncSession`` and never open or commit one themselves.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from store.tracing import instrument_engine

ASYNC_DRIVER = "postgresql+asyncpg"


def async_url(url: str) -> str:
    """``url`` with its driver set to asyncpg.

    Args:
        url: any Postgres URL (``postgresql://``, ``postgres://``,
            ``postgresql+psycopg://`` or already ``postgresql+asyncpg://``).

    Returns:
        The same URL for the asyncpg driver, password included.
    """
    if url.startswith("postgres://"):
        url = "postgresql://" + url.removeprefix("postgres://")
    parsed = make_url(url)
    if parsed.get_backend_name() != "postgresql":
        raise ValueError(f"not a PostgreSQL URL: {parsed.render_as_string(hide_password=True)}")
    return parsed.set(drivername=ASYNC_DRIVER).render_as_string(hide_password=False)


def create_engine(url: str, **kwargs: Any) -> AsyncEngine:
    """An asyncpg engine for ``url``.

    Args:
        url: any Postgres URL (see :func:`async_url`).
        **kwargs: passed to :func:`sqlalchemy.ext.asyncio.create_async_engine`.

    Returns:
        The engine; dispose of it with ``await engine.dispose()``.
    """
    kwargs.setdefault("pool_pre_ping", True)
    # Every statement gets a span (a no-op until a tracer provider is installed): see store.tracing.
    return instrument_engine(create_async_engine(async_url(url), **kwargs))


def create_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    """The session factory every caller uses: objects stay readable after commit.

    Args:
        engine: the engine from :func:`create_engine`.

    Returns:
        ``async_sessionmaker(engine, expire_on_commit=False)``.
    """
    return async_sessionmaker(engine, expire_on_commit=False)
