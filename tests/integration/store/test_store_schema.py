"""The migrated schema is the schema the models describe."""

from __future__ import annotations

import re

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import CheckConstraint, text
from sqlalchemy.ext.asyncio import AsyncEngine

from policy.enums import UNRESOLVED_STATUSES
from store.migrate import alembic_config, upgrade_async
from store.models import metadata
from store.models.tools import PINNED_TOOL_CALL_SQL

pytestmark = pytest.mark.integration


def _diff(connection) -> list:  # noqa: ANN001 - a sync Connection inside run_sync
    context = MigrationContext.configure(connection, opts={"compare_type": True})
    return compare_metadata(context, metadata)


async def test_migrated_schema_matches_models(engine: AsyncEngine) -> None:
    async with engine.connect() as connection:
        diffs = await connection.run_sync(_diff)
    assert diffs == []


async def test_migrations_are_at_head_and_rerunnable(engine: AsyncEngine) -> None:
    await upgrade_async(engine)  # already at head: a no-op
    async with engine.connect() as connection:
        version = await connection.scalar(text("SELECT version_num FROM alembic_version"))
        tables = set(
            await connection.scalars(text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'"))
        )
        trigger = await connection.scalar(
            text("SELECT tgname FROM pg_trigger WHERE tgname = 'branches_no_cycle'")
        )
    assert version == ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert set(metadata.tables) <= tables
    assert trigger == "branches_no_cycle"


async def test_every_table_is_scoped_by_account() -> None:
    # account_deletions is the tombstone of a deleted account: it must hold no account id (only its sha256).
    for table in metadata.tables.values():
        if table.name == "account_deletions":
            assert "account_id" not in table.c
            continue
        assert "account_id" in table.c or table.name == "accounts", table.name
        if table.name != "accounts":
            assert any(fk.column.table.name == "accounts" for fk in table.c.account_id.foreign_keys), table.name


def test_pinned_predicate_lists_the_unresolved_statuses() -> None:
    listed = PINNED_TOOL_CALL_SQL.split("(")[1].split(")")[0]
    assert {s.strip(" '") for s in listed.split(",")} == {s.value for s in UNRESOLVED_STATUSES}


async def test_enum_checks_in_the_database_match_the_models(engine: AsyncEngine) -> None:
    """A value added to a policy enum needs a migration: this test says so."""
    expected: dict[str, set[str]] = {}
    for table in metadata.tables.values():
        for constraint in table.constraints:
            if isinstance(constraint, CheckConstraint) and " IN (" in str(constraint.sqltext):
                expected[str(constraint.name)] = set(re.findall(r"'([^']*)'", str(constraint.sqltext)))
    async with engine.connect() as connection:
        rows = await connection.execute(
            text("SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = ANY(:names)"),
            {"names": list(expected)},
        )
        actual = {name: set(re.findall(r"'([^']*)'", definition)) for name, definition in rows}
    assert actual == expected


# Participants are a handful per conversation and a conversation has one root
# branch: a scan of those to check a reference is cheap. Everything else grows
# with the history, and an unindexed reference makes deletes quadratic.
_SMALL_REFERENCES = {"participants"}
_SMALL_REFERRERS = {"conversations"}


async def test_every_growing_foreign_key_is_backed_by_an_index(engine: AsyncEngine) -> None:
    async with engine.connect() as connection:
        rows = (await connection.execute(text("""
            SELECT c.conname, c.conrelid::regclass::text AS referrer, c.confrelid::regclass::text AS referenced,
                   ARRAY(SELECT a.attname FROM unnest(c.conkey) k
                         JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k) AS columns,
                   ARRAY(SELECT ARRAY(SELECT a.attname FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS x(k, n)
                                      JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = x.k
                                      ORDER BY x.n)::text
                         FROM pg_index i WHERE i.indrelid = c.conrelid) AS indexes
            FROM pg_constraint c WHERE c.contype = 'f'
        """))).all()
    assert rows, "no foreign keys found"
    unbacked = []
    for name, referrer, referenced, columns, indexes in rows:
        if referenced in _SMALL_REFERENCES or referrer in _SMALL_REFERRERS:
            continue
        target = ([c for c in columns if c not in ("account_id", "conversation_id")] or columns)[-1]
        leads = [index.strip("{}").split(",") for index in indexes]
        if not any(lead[:2] == ["account_id", target] or lead[0] == target
                   or set(lead[: len(columns)]) == set(columns) for lead in leads):
            unbacked.append(f"{referrer}.{target} -> {referenced} ({name})")
    assert unbacked == []
