"""Replayable assemblies: store what recomputing an assembly needs, and keep the history that snapshot reads need.

Each assembly now keeps its inputs beside its output: the whole generation
boundary (evidence requests, route limit, token budget, skill catalog, logical
time ...), the candidate limits it was loaded with, the account's user-memory
snapshot (the highest user-memory ``seq`` at load time) with the ids of the user
memories loaded, and the id of the previous assembly its epoch continued. Older
rows keep NULL there and are reported as not replayable.

Two rows were rewritten in place, so an old snapshot could not read them back;
they now carry the values they replaced:

* ``skill_states.history``: the earlier versions of a skill state, each with the
  ``seq`` of its write (a rewrite moves the row's ``seq``);
* ``tool_memories.resolution_history``: each change of a memory's ``resolution``
  with the ``seq`` it took and the status it replaced.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-04
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("context_assemblies", sa.Column("boundary", postgresql.JSONB(), nullable=True))
    op.add_column("context_assemblies", sa.Column("candidate_limits", postgresql.JSONB(), nullable=True))
    op.add_column("context_assemblies", sa.Column("user_memory_seq", sa.BigInteger(), nullable=True))
    op.add_column("context_assemblies", sa.Column("user_memory_ids", postgresql.JSONB(), nullable=True))
    op.add_column("context_assemblies", sa.Column("previous_assembly_id", sa.String(length=64), nullable=True))
    op.add_column("skill_states", sa.Column("history", postgresql.JSONB(), server_default=sa.text("'[]'::jsonb"),
                                            nullable=False))
    op.add_column("tool_memories", sa.Column("resolution_history", postgresql.JSONB(),
                                             server_default=sa.text("'[]'::jsonb"), nullable=False))


def downgrade() -> None:
    op.drop_column("tool_memories", "resolution_history")
    op.drop_column("skill_states", "history")
    op.drop_column("context_assemblies", "previous_assembly_id")
    op.drop_column("context_assemblies", "user_memory_ids")
    op.drop_column("context_assemblies", "user_memory_seq")
    op.drop_column("context_assemblies", "candidate_limits")
    op.drop_column("context_assemblies", "boundary")
