"""Record each assembly's cache epoch, and find a participant's previous assembly fast.

An assembly now belongs to its participant's cache epoch (a stable prefix,
then appended events; see ``policy/epochs.py``). The ``epoch`` column holds
the ``EpochRecord``; the next call of the same participant on the same branch
reads it back through ``ix_context_assemblies_participant_latest``. Older
assemblies have none, and the next call starts a new epoch.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-03
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("context_assemblies", sa.Column("epoch", postgresql.JSONB(), nullable=True))
    op.create_index("ix_context_assemblies_participant_latest", "context_assemblies",
                    ["account_id", "branch_id", "participant_id", "snapshot_seq"])


def downgrade() -> None:
    op.drop_index("ix_context_assemblies_participant_latest", table_name="context_assemblies")
    op.drop_column("context_assemblies", "epoch")
