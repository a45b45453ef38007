"""Where a piece of text survives in an account's rows: every column of every account table, searched.

Used to check a forgetting promise from the outside (retention, deletion): plant a
unique canary in what a user or a tool wrote, apply the rule, then ask which rows
still hold the canary. The search is derived from the models, so a column or a
table added later is searched without touching this module: every column of every
table with ``account_id``, text, JSON and arrays as their text form, bytes as bytes.
"""

from __future__ import annotations

from sqlalchemy import LargeBinary, String, Table, cast, func, literal, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from store._sql import translate_errors
from store.models import metadata
from store.records import StoreRecord


class TextSite(StoreRecord):
    """One row and column that holds the text searched for."""

    table: str
    column: str
    row_id: str
    """The row's ``id`` (or its primary key's values joined by ``/``)."""


def _searchable(table: Table) -> list[str]:
    """The columns that can hold text: everything but numbers, booleans and timestamps."""
    skip = ("INTEGER", "BIGINT", "SMALLINT", "BOOLEAN", "FLOAT", "DOUBLE", "NUMERIC", "TIMESTAMP", "DATE")
    return [column.name for column in table.c if not any(str(column.type).upper().startswith(s) for s in skip)]


def searched_columns() -> list[tuple[str, str]]:
    """Every ``(table, column)`` :func:`text_sites` searches."""
    return [(table.name, name) for table in metadata.sorted_tables if "account_id" in table.c
            for name in _searchable(table)]


@translate_errors
async def text_sites(session: AsyncSession, account_id: str, needle: str) -> list[TextSite]:
    """Every ``(table, column, row)`` of the account that contains ``needle``.

    Args:
        needle: the text looked for (a canary: plain ASCII, so its JSON form is itself).
    """
    found: list[TextSite] = []
    for table in metadata.sorted_tables:
        if "account_id" not in table.c:
            continue
        key = list(table.primary_key.columns)
        for name in _searchable(table):
            column = table.c[name]
            if isinstance(column.type, LargeBinary):
                hit = func.position(func.convert_to(literal(needle), "UTF8").op("IN")(column)) > 0
            else:
                hit = cast(column, String).contains(needle, autoescape=True)
            rows = await session.execute(select(*key).where(table.c.account_id == account_id, or_(hit)))
            for row in rows:
                found.append(TextSite(table=table.name, column=name, row_id="/".join(str(v) for v in row)))
    return found


__all__ = ["TextSite", "searched_columns", "text_sites"]
