"""Tool memories name the resources their call read or wrote (write supersession follows the resource).

``tool_memories.resources``: ``r:``/``w:`` and a digest per resource (a file, a record), see
:mod:`policy.resources`; a GIN index serves the ``&&`` lookup a new memory's links make. Rows
written before this revision name none: they are superseded by subject only, as before.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-07
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0012"
down_revision: str | Sequence[str] | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("tool_memories", sa.Column("resources", postgresql.ARRAY(sa.String(length=64)),
                                             server_default=sa.text("'{}'"), nullable=False))
    op.create_index("ix_tool_memories_resources", "tool_memories", ["resources"], unique=False,
                    postgresql_using="gin")


def downgrade() -> None:
    op.drop_index("ix_tool_memories_resources", table_name="tool_memories", postgresql_using="gin")
    op.drop_column("tool_memories", "resources")
