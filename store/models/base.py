"""Declarative base, column types and constraint helpers shared by every table.

Conventions of the schema:

* Ids are opaque strings (``str(uuid4())`` unless the caller supplies one, so
  a workflow can pass a deterministic id and make a retried write a no-op).
* Every table carries ``account_id``. Foreign keys between graph tables are
  *composite* and include ``account_id`` (and ``conversation_id`` for nodes),
  so the database itself refuses a row of one account pointing at a row of
  another, or a node pointing at a branch of another conversation.
* Enum-valued columns are plain strings with a CHECK listing the values of the
  matching :mod:`policy.enums` type: adding a value is a one-line migration.
* Every graph node has ``seq`` from its conversation's counter.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Constraint,
    ForeignKey,
    ForeignKeyConstraint,
    MetaData,
    Table,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, TIMESTAMP
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from store.models.types import StoredId, StoredJSON, StoredText


def _last_column(constraint: Constraint, table: Table) -> str:
    # Graph foreign keys are composite (account_id, conversation_id, x_id); the
    # last column is the one that tells them apart and keeps names < 63 chars.
    return list(constraint.columns)[-1].name  # type: ignore[attr-defined]


NAMING_CONVENTION: dict[str, Any] = {
    "last_column": _last_column,
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(last_column)s",
    "pk": "pk_%(table_name)s",
}
"""Deterministic constraint names, so migrations and models agree by name."""

ID_LENGTH = 64
"""Maximum length of an id."""


class Base(DeclarativeBase):
    """Declarative base of every Dossier table."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {
        str: StoredText(),
        int: BigInteger(),
        datetime: TIMESTAMP(timezone=True),
        dict[str, Any]: StoredJSON(),
        list[Any]: StoredJSON(),
        list[str]: ARRAY(StoredText()),
    }
    """Text and JSON columns store what Postgres cannot hold in a fixed form (:mod:`store.models.types`)."""


def id_column(*, primary_key: bool = False, nullable: bool = False) -> Mapped[Any]:
    """A string id column (primary key or reference).

    Args:
        primary_key: whether the column is the table's primary key.
        nullable: whether the reference is optional.

    Returns:
        A ``VARCHAR(64)`` mapped column.
    """
    return mapped_column(StoredId(ID_LENGTH), primary_key=primary_key, nullable=nullable)


def account_column() -> Mapped[str]:
    """``account_id VARCHAR(64) NOT NULL REFERENCES accounts(id)``."""
    return mapped_column(StoredId(ID_LENGTH), ForeignKey("accounts.id"), nullable=False)


def id_array_column() -> Mapped[list[str]]:
    """A ``VARCHAR(64)[]`` column of ids, never NULL, empty by default."""
    return mapped_column(ARRAY(StoredId(ID_LENGTH)), nullable=False, server_default=text("'{}'"))


def created_at_column() -> Mapped[datetime]:
    """``TIMESTAMPTZ NOT NULL DEFAULT now()``."""
    return mapped_column(TIMESTAMP(timezone=True), nullable=False, server_default=func.now())


def enum_check(column: str, values: type[StrEnum] | tuple[str, ...], *, nullable: bool = False) -> CheckConstraint:
    """A CHECK constraint limiting ``column`` to the values of an enum.

    Args:
        values: a :class:`StrEnum` type or an explicit tuple of values.
        nullable: whether NULL is also allowed (it is anyway in SQL, but the
            constraint text then says so explicitly).

    Returns:
        ``CHECK (column IN (...))`` named ``ck_<table>_<column>``.
    """
    allowed = tuple(v.value for v in values) if isinstance(values, type) else values
    listed = ", ".join(f"'{v}'" for v in sorted(allowed))
    sql = f"{column} IN ({listed})"
    if nullable:
        sql = f"{column} IS NULL OR {sql}"
    return CheckConstraint(sql, name=column)


def conversation_fk(*, name_hint: str = "conversation_id") -> ForeignKeyConstraint:
    """``(account_id, conversation_id) -> conversations(account_id, id)``."""
    return ForeignKeyConstraint(
        ["account_id", name_hint], ["conversations.account_id", "conversations.id"]
    )


def node_fk(column: str, target: str, **kwargs: Any) -> ForeignKeyConstraint:
    """``(account_id, conversation_id, column) -> target(account_id, conversation_id, id)``.

    Args:
        column: the referencing id column.
        target: the referenced table name.
        **kwargs: passed to :class:`ForeignKeyConstraint` (e.g. ``use_alter``).

    Returns:
        The composite foreign key; NULL in ``column`` disables it (MATCH SIMPLE).
    """
    return ForeignKeyConstraint(
        ["account_id", "conversation_id", column],
        [f"{target}.account_id", f"{target}.conversation_id", f"{target}.id"],
        **kwargs,
    )


LIVE_SCOPE_SQL = "visibility = 'conversation' OR cardinality(shared_with) > 0"
"""Predicate of the partial indexes over records visible beyond their lineage."""


RETENTION_DUE_SQL = "retention <> 'keep'"
"""Predicate of the partial indexes a retention collection scans: rows some class may still apply to."""
