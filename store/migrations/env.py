"""Alembic environment of the Dossier store (asyncpg).

The database URL comes, in order, from ``config.attributes["database_url"]``
(set by :mod:`store.migrate`), the ``sqlalchemy.url`` option, or the
``DATABASE_URL`` environment variable. A caller that already holds a
connection passes it as ``config.attributes["connection"]`` (see
:func:`store.migrate.upgrade_async`).
"""

from __future__ import annotations

import asyncio
import os
from logging.config import fileConfig

from alembic import context
from sqlalchemy import pool
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

from store.db import async_url
from store.models import metadata

config = context.config

if config.config_file_name is not None and config.attributes.get("configure_logger", True):
    fileConfig(config.config_file_name, disable_existing_loggers=False)


def _database_url() -> str:
    url = config.attributes.get("database_url") or config.get_main_option("sqlalchemy.url") or os.environ.get(
        "DATABASE_URL"
    )
    if not url:
        raise RuntimeError("no database URL: set DATABASE_URL or call store.migrate.upgrade(url)")
    return async_url(url)


def _configure(**kwargs: object) -> None:
    context.configure(target_metadata=metadata, compare_type=True, compare_server_default=False, **kwargs)


def run_migrations_offline() -> None:
    """Emit SQL to stdout instead of running it (``alembic upgrade head --sql``)."""
    _configure(url=_database_url(), literal_binds=True, dialect_opts={"paramstyle": "named"})
    with context.begin_transaction():
        context.run_migrations()


def _run_on(connection: Connection) -> None:
    _configure(connection=connection)
    with context.begin_transaction():
        context.run_migrations()


async def _run_async() -> None:
    engine = create_async_engine(_database_url(), poolclass=pool.NullPool)
    try:
        async with engine.connect() as connection:
            await connection.run_sync(_run_on)
            await connection.commit()
    finally:
        await engine.dispose()


def run_migrations_online() -> None:
    """Run the migrations on a shared connection, or on a fresh asyncpg engine."""
    connection = config.attributes.get("connection")
    if connection is not None:
        _run_on(connection)
    else:
        asyncio.run(_run_async())


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
