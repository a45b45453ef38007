"""Stored objects: every object a tool call puts in the bucket, recorded before the put.

``stored_objects`` holds one row per (account, tool call, key): the key, sha256,
size, content type and privacy class of an object a call's attempt wrote, and
whether the call's succeeded result refers to it (``claimed``) or not yet
(``pending``). The row is committed before the put, so no object is ever
unknown to the graph; the retention sweep removes pending rows (and their
objects, when no other row needs the key) after a grace period.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-04
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "stored_objects",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("account_id", sa.String(length=64), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("tool_call_id", sa.String(length=64), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("sha256", sa.Text(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("content_type", sa.Text(), nullable=False),
        sa.Column("privacy", sa.Text(), nullable=False),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("created_at", postgresql.TIMESTAMP(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("written_at", postgresql.TIMESTAMP(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("char_length(sha256) = 64", name=op.f("ck_stored_objects_sha256")),
        sa.CheckConstraint("size >= 0", name=op.f("ck_stored_objects_size")),
        sa.CheckConstraint("state IN ('claimed', 'pending')", name=op.f("ck_stored_objects_state")),
        sa.CheckConstraint(
            "privacy IN ('google_derived', 'oauth', 'public', 'secret_adjacent', 'user')",
            name=op.f("ck_stored_objects_privacy"),
        ),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.id"], name=op.f("fk_stored_objects_account_id")),
        sa.ForeignKeyConstraint(
            ["account_id", "conversation_id", "tool_call_id"],
            ["tool_calls.account_id", "tool_calls.conversation_id", "tool_calls.id"],
            name=op.f("fk_stored_objects_tool_call_id"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_stored_objects")),
        sa.UniqueConstraint("account_id", "tool_call_id", "key",
                            name=op.f("uq_stored_objects_account_id_tool_call_id_key")),
    )
    op.create_index("ix_stored_objects_account_id_key", "stored_objects", ["account_id", "key"])
    op.create_index("ix_stored_objects_pending", "stored_objects", ["written_at"],
                    postgresql_where=sa.text("state = 'pending'"))


def downgrade() -> None:
    op.drop_index("ix_stored_objects_pending", table_name="stored_objects")
    op.drop_index("ix_stored_objects_account_id_key", table_name="stored_objects")
    op.drop_table("stored_objects")
