"""Evidence requests: a model's ``recall`` of the raw evidence behind an id, with its PolicyDecision.

One row per ``recall`` tool call: the id and locator the model asked for, the
artifact it resolved to (when the viewer may see one), the decision of the
recall gates (``policy.recall``) and the bytes served. The answer itself is the
call's captured result, like any tool result.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-04
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _node_fk(column: str, target: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["account_id", "conversation_id", column],
        [f"{target}.account_id", f"{target}.conversation_id", f"{target}.id"],
        name=op.f(f"fk_evidence_requests_{column}"),
    )


def upgrade() -> None:
    op.create_table(
        "evidence_requests",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("account_id", sa.String(length=64), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("branch_id", sa.String(length=64), nullable=False),
        sa.Column("participant_id", sa.String(length=64), nullable=False),
        sa.Column("tool_call_id", sa.String(length=64), nullable=False),
        sa.Column("model_run_id", sa.String(length=64), nullable=True),
        sa.Column("requested_ref", sa.Text(), nullable=False),
        sa.Column("artifact_id", sa.String(length=64), nullable=True),
        sa.Column("locator", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("outcome", sa.Text(), nullable=False),
        sa.Column("decision", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("bytes_served", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("created_at", postgresql.TIMESTAMP(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint(
            "outcome IN ('denied', 'included', 'marked_stale', 'noted', 'omitted', 'protected', 'rehydrated')",
            name=op.f("ck_evidence_requests_outcome"),
        ),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.id"], name=op.f("fk_evidence_requests_account_id")),
        _node_fk("tool_call_id", "tool_calls"),
        _node_fk("branch_id", "branches"),
        _node_fk("participant_id", "participants"),
        _node_fk("model_run_id", "model_runs"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_evidence_requests")),
        sa.UniqueConstraint("account_id", "tool_call_id", name=op.f("uq_evidence_requests_account_id_tool_call_id")),
    )
    op.create_index("ix_evidence_requests_account_id_branch_id", "evidence_requests", ["account_id", "branch_id"])
    op.create_index("ix_evidence_requests_account_id_model_run_id", "evidence_requests",
                    ["account_id", "model_run_id"])


def downgrade() -> None:
    op.drop_index("ix_evidence_requests_account_id_model_run_id", table_name="evidence_requests")
    op.drop_index("ix_evidence_requests_account_id_branch_id", table_name="evidence_requests")
    op.drop_table("evidence_requests")
