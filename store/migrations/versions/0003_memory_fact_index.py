"""Index the facts of live tool memories, for contradiction lookups.

Deriving a memory links it to the live memories it supersedes (same subject,
``ix_tool_memories_subject``) and those it contradicts (another subject
asserting a different value for one of its ``entity.attribute`` facts). The
second lookup is ``payload -> 'facts' ?| <the new memory's fact keys>``; a GIN
index on that expression, limited to live memories, keeps it an index scan
however long the conversation grows.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-03
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute(
        "CREATE INDEX ix_tool_memories_facts ON tool_memories USING gin ((payload -> 'facts')) "
        "WHERE superseded_by IS NULL"
    )


def downgrade() -> None:
    op.drop_index("ix_tool_memories_facts", table_name="tool_memories")
