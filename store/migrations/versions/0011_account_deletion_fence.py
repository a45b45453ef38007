"""Account deletion fence: a deletion marks its account first, and no row may be inserted for it after.

``accounts.deleting_at`` is set by the first step of an account deletion
(:mod:`store.account_deletion`). Every table holding ``account_id`` gets an
``AFTER INSERT ... FOR EACH STATEMENT`` trigger (``COPY`` included) that
raises SQLSTATE ``DSR02`` when a row it inserted belongs to such an account;
``store/_sql.py`` maps it to ``store.errors.AccountDeletedError``. One
statement-level check per insert statement, over its new rows: a bulk write
costs one lookup per distinct account, not one per row.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-04
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0011"
down_revision: str | Sequence[str] | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FUNCTION = """
CREATE FUNCTION refuse_deleted_account() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    doomed varchar;
BEGIN
    SELECT a.id INTO doomed
      FROM (SELECT DISTINCT account_id FROM inserted) n
      JOIN accounts a ON a.id = n.account_id
     WHERE a.deleting_at IS NOT NULL
     LIMIT 1;
    IF doomed IS NOT NULL THEN
        RAISE EXCEPTION 'account is being deleted: no row may be written for it (table %)', TG_TABLE_NAME
            USING ERRCODE = 'DSR02';
    END IF;
    RETURN NULL;
END
$$
"""


def _account_tables() -> list[str]:
    inspector = sa.inspect(op.get_bind())
    return sorted(name for name in inspector.get_table_names()
                  if any(column["name"] == "account_id" for column in inspector.get_columns(name)))


def trigger_name(table: str) -> str:
    """The fence trigger of ``table``."""
    return f"{table}_refuse_deleted_account"


def upgrade() -> None:
    op.add_column("accounts", sa.Column("deleting_at", postgresql.TIMESTAMP(timezone=True), nullable=True))
    op.execute(FUNCTION)
    for table in _account_tables():
        op.execute(f"CREATE TRIGGER {trigger_name(table)} AFTER INSERT ON {table} "
                   "REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION refuse_deleted_account()")


def downgrade() -> None:
    for table in _account_tables():
        op.execute(f"DROP TRIGGER IF EXISTS {trigger_name(table)} ON {table}")
    op.execute("DROP FUNCTION refuse_deleted_account()")
    op.drop_column("accounts", "deleting_at")
