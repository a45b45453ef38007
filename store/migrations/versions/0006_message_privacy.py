"""A privacy class on transcript messages.

A model's message may repeat anything its run was shown, so it is stored as
strict as that context (``store.messages.append_message`` raises it through
``store.taint.run_privacy``), and a participant on a route that may not
receive the class does not read it. Existing messages are user data, as they
were treated until now.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("messages", sa.Column("privacy", sa.Text(), server_default="user", nullable=False))
    op.create_check_constraint(
        op.f("ck_messages_privacy"), "messages",
        "privacy IN ('google_derived', 'oauth', 'public', 'secret_adjacent', 'user')",
    )


def downgrade() -> None:
    op.drop_constraint(op.f("ck_messages_privacy"), "messages", type_="check")
    op.drop_column("messages", "privacy")
