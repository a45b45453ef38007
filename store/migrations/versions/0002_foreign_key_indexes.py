"""Index the referencing columns of the foreign keys that had none.

Deleting (or re-pointing) a referenced row makes PostgreSQL look for rows
that still point at it. Without an index on the referencing columns that is a
scan of the referencing table per deleted row, so removing a conversation with
n model runs cost O(n^2): the growth benchmark's cleanup of a 100k-artifact
history ran for over ten minutes on one DELETE. Retention and account deletion
need the same lookups. Found by listing every foreign key whose columns lead
no index.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-03
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

INDEXES: tuple[tuple[str, str], ...] = (
    ("branches", "fork_message_id"),
    ("messages", "model_run_id"),
    ("model_runs", "message_id"),
    ("model_runs", "context_assembly_id"),
    ("model_runs", "parent_model_run_id"),
    ("model_runs", "branch_id"),
    ("tool_memories", "model_run_id"),
    ("continuation_checkpoints", "model_run_id"),
    ("tool_calls", "model_run_id"),
    ("tool_artifacts", "model_run_id"),
    ("context_assemblies", "branch_id"),
)
"""(table, referencing column); each index is ``(account_id, column)``."""


def upgrade() -> None:
    for table, column in INDEXES:
        op.create_index(f"ix_{table}_account_id_{column}", table, ["account_id", column])


def downgrade() -> None:
    for table, column in reversed(INDEXES):
        op.drop_index(f"ix_{table}_account_id_{column}", table_name=table)
