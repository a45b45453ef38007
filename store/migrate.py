"""Schema migrations, run programmatically (``alembic upgrade head``).

The schema is only ever created by the versioned migrations in
``store/migrations/versions``; nothing calls ``metadata.create_all``.

From a shell, at the repository root::

    DATABASE_URL=postgresql://... alembic -c store/alembic.ini upgrade head
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from store.db import create_engine

_HERE = Path(__file__).resolve().parent
HEAD = "head"


def alembic_config(database_url: str | None = None) -> Config:
    """The alembic configuration of the store, independent of the working directory.

    Args:
        database_url: the database to migrate (any Postgres URL); when
            ``None``, ``env.py`` falls back to ``DATABASE_URL``.

    Returns:
        A :class:`alembic.config.Config` that does not touch logging.
    """
    config = Config(str(_HERE / "alembic.ini"))
    config.set_main_option("script_location", str(_HERE / "migrations"))
    # Logging is configured once, by the composition root; not by a migration.
    config.attributes["configure_logger"] = False
    if database_url is not None:
        # Passed as an attribute, not an ini option: ini values interpolate '%'.
        config.attributes["database_url"] = database_url
    return config


def upgrade(database_url: str, revision: str = HEAD) -> None:
    """Migrate ``database_url`` to ``revision``; blocking.

    Runs its own event loop, so it must not be called from a running one:
    use :func:`upgrade_async` there.

    Args:
        database_url: any Postgres URL (driver is switched to asyncpg).
        revision: target revision, ``"head"`` by default.
    """
    command.upgrade(alembic_config(database_url), revision)


def _upgrade_on(connection: Connection, revision: str) -> None:
    config = alembic_config()
    config.attributes["connection"] = connection
    command.upgrade(config, revision)


async def upgrade_async(target: str | AsyncEngine, revision: str = HEAD) -> None:
    """Migrate from inside an event loop, on one connection of ``target``.

    Args:
        target: a Postgres URL or an existing :class:`AsyncEngine`.
        revision: target revision, ``"head"`` by default.
    """
    engine = create_engine(target) if isinstance(target, str) else target
    try:
        async with engine.begin() as connection:
            await connection.run_sync(_upgrade_on, revision)
    finally:
        if isinstance(target, str):
            await engine.dispose()


def downgrade(database_url: str, revision: str) -> None:
    """Migrate ``database_url`` down to ``revision`` (``"base"`` drops everything).
    """
    command.downgrade(alembic_config(database_url), revision)
