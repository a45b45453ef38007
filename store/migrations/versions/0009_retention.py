"""Retention classes on artifacts, memories and assembly traces, and account-deletion tombstones.

Each of ``tool_artifacts``, ``tool_memories`` and ``context_assemblies`` gets
its retention rule (``retention``, ``retention_days``, written with the row)
and ``retention_state`` (what a collection has done to it), with a partial
index over the rows a rule may still apply to. An artifact whose bytes
retention removed or moved no longer holds them, so ``payload_location``
binds live rows only. ``account_deletions`` records each deleted account by
the sha256 of its id and nothing else.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-04
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("tool_artifacts", "tool_memories", "context_assemblies")
CLASSES = "'archive', 'delete', 'hash_only', 'keep', 'redact'"
STATES = "'archived', 'hash_only', 'live', 'redacted'"
LIVE_PAYLOAD = "(storage = 'inline' AND inline_payload IS NOT NULL) OR (storage = 'object' AND storage_key IS NOT NULL)"


def upgrade() -> None:
    for table in TABLES:
        op.add_column(table, sa.Column("retention", sa.Text(), server_default="keep", nullable=False))
        op.add_column(table, sa.Column("retention_days", sa.BigInteger(), server_default=sa.text("0"), nullable=False))
        op.add_column(table, sa.Column("retention_state", sa.Text(), server_default="live", nullable=False))
        op.create_check_constraint(op.f(f"ck_{table}_retention"), table, f"retention IN ({CLASSES})")
        op.create_check_constraint(op.f(f"ck_{table}_retention_state"), table, f"retention_state IN ({STATES})")
        op.create_check_constraint(op.f(f"ck_{table}_retention_days"), table, "retention_days >= 0")
        op.create_index(f"ix_{table}_retention_due", table, ["created_at"],
                        postgresql_where=sa.text("retention <> 'keep'"))
    op.drop_constraint(op.f("ck_tool_artifacts_payload_location"), "tool_artifacts", type_="check")
    op.create_check_constraint(op.f("ck_tool_artifacts_payload_location"), "tool_artifacts",
                               f"retention_state <> 'live' OR {LIVE_PAYLOAD}")
    op.create_table(
        "account_deletions",
        sa.Column("account_sha256", sa.Text(), nullable=False),
        sa.Column("rows_deleted", sa.BigInteger(), nullable=False),
        sa.Column("objects_deleted", sa.BigInteger(), nullable=False),
        sa.Column("finished_at", postgresql.TIMESTAMP(timezone=True), server_default=sa.text("now()"),
                  nullable=False),
        sa.CheckConstraint("char_length(account_sha256) = 64", name=op.f("ck_account_deletions_account_sha256")),
        sa.PrimaryKeyConstraint("account_sha256", name=op.f("pk_account_deletions")),
    )


def downgrade() -> None:
    op.drop_table("account_deletions")
    op.drop_constraint(op.f("ck_tool_artifacts_payload_location"), "tool_artifacts", type_="check")
    op.create_check_constraint(op.f("ck_tool_artifacts_payload_location"), "tool_artifacts", LIVE_PAYLOAD)
    for table in TABLES:
        op.drop_index(f"ix_{table}_retention_due", table_name=table)
        for column in ("retention_state", "retention_days", "retention"):
            op.drop_column(table, column)
