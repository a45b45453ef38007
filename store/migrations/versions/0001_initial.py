"""Initial schema: the runtime graph, tool state, memories and the assembly audit trail.

Written once from the models (``alembic revision --autogenerate`` at
development time), then finished by hand: the four foreign keys that close
reference cycles (conversation -> root branch, branch -> fork message,
model run -> message, model run -> context assembly) are added after every
table exists, and the ``branches_no_cycle`` trigger refuses a parent update
that would make a branch its own ancestor.

Revision ID: 0001
Revises:
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# Walks up from the new parent; reaching the updated branch means the update
# would close a loop. The walk itself stops on any revisit, so pre-existing
# corrupt data cannot make it spin. SQLSTATE DSR01 is mapped to
# store.errors.BranchCycleError (store/_sql.py); DETAIL carries the path.
# The advisory lock serialises re-parenting within a conversation, so two
# concurrent updates cannot each close half of a loop.
BRANCHES_NO_CYCLE_FUNCTION = """
CREATE FUNCTION branches_no_cycle() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    loop_path varchar[];
BEGIN
    IF NEW.parent_branch_id IS NULL THEN
        RETURN NEW;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended('dossier.branches:' || NEW.conversation_id, 0));
    WITH RECURSIVE up(id, parent_branch_id, path) AS (
        SELECT b.id, b.parent_branch_id, ARRAY[NEW.id, b.id]::varchar[]
          FROM branches b
         WHERE b.id = NEW.parent_branch_id
      UNION ALL
        SELECT b.id, b.parent_branch_id, up.path || b.id
          FROM up
          JOIN branches b ON b.id = up.parent_branch_id
         WHERE up.id <> NEW.id AND NOT (b.id = ANY(up.path[2:]))
    )
    SELECT up.path INTO loop_path FROM up WHERE up.id = NEW.id LIMIT 1;
    IF loop_path IS NOT NULL THEN
        RAISE EXCEPTION 'branch cycle: % would become its own ancestor', NEW.id
            USING ERRCODE = 'DSR01', DETAIL = array_to_string(loop_path, ',');
    END IF;
    RETURN NEW;
END
$$
"""

BRANCHES_NO_CYCLE_TRIGGER = """
CREATE TRIGGER branches_no_cycle
BEFORE UPDATE OF parent_branch_id ON branches
FOR EACH ROW EXECUTE FUNCTION branches_no_cycle()
"""


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table(
        "accounts",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.Text(), server_default="", nullable=False),
        sa.Column("next_user_seq", sa.BigInteger(), server_default=sa.text("1"), nullable=False),
        sa.Column("created_at", postgresql.TIMESTAMP(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_accounts")),
    )
    op.create_table(
        "conversations",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("account_id", sa.String(length=64), nullable=False),
        sa.Column("title", sa.Text(), server_default="", nullable=False),
        sa.Column("next_seq", sa.BigInteger(), server_default=sa.text("1"), nullable=False),
        sa.Column("root_branch_id", sa.String(length=64), nullable=True),
        sa.Column("created_at", postgresql.TIMESTAMP(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("next_seq >= 1", name=op.f("ck_conversations_next_seq")),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.id"], name=op.f("fk_conversations_account_id")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_conversations")),
        sa.UniqueConstraint("account_id", "id", name=op.f("uq_conversations_account_id_id")),
    )
    op.create_index(
        "ix_conversations_account_id_created_at", "conversations", ["account_id", "created_at"], unique=False
    )
    op.create_table(
        "user_memories",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("account_id", sa.String(length=64), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("privacy", sa.Text(), server_default="user", nullable=False),
        sa.Column("participant_id", sa.String(length=64), nullable=True),
        sa.Column("created_at", postgresql.TIMESTAMP(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint(
            "privacy IN ('google_derived', 'oauth', 'public', 'secret_adjacent', 'user')",
            name=op.f("ck_user_memories_privacy"),
        ),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.id"], name=op.f("fk_user_memories_account_id")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_user_memories")),
    )
    op.create_index("ix_user_memories_account_id_seq", "user_memories", ["account_id", "seq"], unique=False)
    op.create_table(
        "branches",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("account_id", sa.String(length=64), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("parent_branch_id", sa.String(length=64), nullable=True),
        sa.Column("fork_message_id", sa.String(length=64), nullable=True),
        sa.Column("fork_seq", sa.BigInteger(), nullable=True),
        sa.Column("name", sa.Text(), server_default="", nullable=False),
        sa.Column("created_at", postgresql.TIMESTAMP(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("(parent_branch_id IS NULL) = (fork_seq IS NULL)", name=op.f("ck_branches_fork_point")),
        sa.CheckConstraint(
            "parent_branch_id IS NULL OR parent_branch_id <> id", name=op.f("ck_branches_not_own_parent")
        ),
        sa.ForeignKeyConstraint(
            ["account_id", "conversation_id", "parent_branch_id"],
            ["branches.account_id", "branches.conversation_id", "branches.id"],
            name=op.f("fk_branches_parent_branch_id"),
        ),
        sa.ForeignKeyConstraint(
            ["account_id", "conversation_id"],
            ["conversations.account_id", "conversations.id"],
            name=op.f("fk_branches_conversation_id"),
        ),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.id"], name=op.f("fk_branches_account_id")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_branches")),
        sa.UniqueConstraint(
            "account_id", "conversation_id", "id", name=op.f("uq_branches_account_id_conversation_id_id")
        ),
    )
    op.create_index(
        "ix_branches_account_id_conversation_id", "branches", ["account_id", "conversation_id"], unique=False
    )
    op.create_index(
        "ix_branches_account_id_parent_branch_id", "branches", ["account_id", "parent_branch_id"], unique=False
    )
    op.create_table(
        "participants",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("account_id", sa.String(length=64), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("role", sa.Text(), server_default="assistant", nullable=False),
        sa.Column("provider", sa.Text(), nullable=True),
        sa.Column("model", sa.Text(), nullable=True),
        sa.Column("system_prompt", sa.Text(), server_default="", nullable=False),
        sa.Column("parent_participant_id", sa.String(length=64), nullable=True),
        sa.Column(
            "config", postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'{}'::jsonb"), nullable=False
        ),
        sa.Column("created_at", postgresql.TIMESTAMP(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("role IN ('assistant', 'moderator', 'subagent', 'user')", name=op.f("ck_participants_role")),
        sa.ForeignKeyConstraint(
            ["account_id", "conversation_id", "parent_participant_id"],
            ["participants.account_id", "participants.conversation_id", "participants.id"],
            name=op.f("fk_participants_parent_participant_id"),
        ),
        sa.ForeignKeyConstraint(
            ["account_id", "conversation_id"],
            ["conversations.account_id", "conversations.id"],
            name=op.f("fk_participants_conversation_id"),
        ),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.id"], name=op.f("fk_participants_account_id")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_participants")),
        sa.UniqueConstraint(
            "account_id", "conversation_id", "id", name=op.f("uq_participants_account_id_conversation_id_id")
        ),
    )
    op.create_table(
        "model_runs",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("account_id", sa.String(length=64), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("branch_id", sa.String(length=64), nullable=False),
        sa.Column("participant_id", sa.String(length=64), nullable=False),
        sa.Column("message_id", sa.String(length=64), nullable=True),
        sa.Column("provider", sa.Text(), nullable=True),
        sa.Column("model", sa.Text(), nullable=True),
        sa.Column("runtime_kind", sa.Text(), server_default="chat", nullable=False),
        sa.Column("workflow_id", sa.Text(), nullable=True),
        sa.Column("parent_model_run_id", sa.String(length=64), nullable=True),
        sa.Column("status", sa.Text(), server_default="running", nullable=False),
        sa.Column("context_assembly_id", sa.String(length=64), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column(
            "usage", postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'{}'::jsonb"), nullable=False
        ),
        sa.Column("started_at", postgresql.TIMESTAMP(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("finished_at", postgresql.TIMESTAMP(timezone=True), nullable=True),
        sa.CheckConstraint(
            "runtime_kind IN ('branch_send', 'chat', 'discussion', 'multi_model', 'parent_resume', 'scheduled_job', 'subagent_child')",
            name=op.f("ck_model_runs_runtime_kind"),
        ),
        sa.CheckConstraint(
            "status IN ('cancelled', 'failed', 'running', 'succeeded')", name=op.f("ck_model_runs_status")
        ),
        sa.ForeignKeyConstraint(
            ["account_id", "conversation_id", "branch_id"],
            ["branches.account_id", "branches.conversation_id", "branches.id"],
            name=op.f("fk_model_runs_branch_id"),
        ),
        sa.ForeignKeyConstraint(
            ["account_id", "conversation_id", "parent_model_run_id"],
            ["model_runs.account_id", "model_runs.conversation_id", "model_runs.id"],
            name=op.f("fk_model_runs_parent_model_run_id"),
        ),
        sa.ForeignKeyConstraint(
            ["account_id", "conversation_id", "participant_id"],
            ["participants.account_id", "participants.conversation_id", "participants.id"],
            name=op.f("fk_model_runs_participant_id"),
        ),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.id"], name=op.f("fk_model_runs_account_id")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_model_runs")),
        sa.UniqueConstraint(
            "account_id", "conversation_id", "id", name=op.f("uq_model_runs_account_id_conversation_id_id")
        ),
    )
    op.create_index(
        "ix_model_runs_account_id_conversation_id_started_at",
        "model_runs",
        ["account_id", "conversation_id", "started_at"],
        unique=False,
    )
    op.create_index("ix_model_runs_account_id_started_at", "model_runs", ["account_id", "started_at"], unique=False)
    op.create_table(
        "skill_states",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("account_id", sa.String(length=64), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("branch_id", sa.String(length=64), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("participant_id", sa.String(length=64), nullable=False),
        sa.Column("skill", sa.Text(), nullable=False),
        sa.Column(
            "state", postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'{}'::jsonb"), nullable=False
        ),
        sa.Column("active", sa.Boolean(), server_default=sa.text("true"), nullable=False),
        sa.Column("visibility", sa.Text(), server_default="participant_private", nullable=False),
        sa.Column("privacy", sa.Text(), server_default="user", nullable=False),
        sa.Column("created_at", postgresql.TIMESTAMP(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", postgresql.TIMESTAMP(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint(
            "privacy IN ('google_derived', 'oauth', 'public', 'secret_adjacent', 'user')",
            name=op.f("ck_skill_states_privacy"),
        ),
        sa.CheckConstraint(
            "visibility IN ('audit_only', 'branch', 'conversation', 'participant_private')",
            name=op.f("ck_skill_states_visibility"),
        ),
        sa.ForeignKeyConstraint(
            ["account_id", "conversation_id", "branch_id"],
            ["branches.account_id", "branches.conversation_id", "branches.id"],
            name=op.f("fk_skill_states_branch_id"),
        ),
        sa.ForeignKeyConstraint(
            ["account_id", "conversation_id", "participant_id"],
            ["participants.account_id", "participants.conversation_id", "participants.id"],
            name=op.f("fk_skill_states_participant_id"),
        ),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.id"], name=op.f("fk_skill_states_account_id")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_skill_states")),
        sa.UniqueConstraint(
            "account_id",
            "participant_id",
            "skill",
            "branch_id",
            name=op.f("uq_skill_states_account_id_participant_id_skill_branch_id"),
        ),
    )
    op.create_index(
        "ix_skill_states_node", "skill_states", ["account_id", "conversation_id", "branch_id", "seq"], unique=False
    )
    op.create_index(
        "ix_skill_states_scope",
        "skill_states",
        ["account_id", "conversation_id", "seq"],
        unique=False,
        postgresql_where=sa.text("visibility = 'conversation'"),
    )
    op.create_table(
        "context_assemblies",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("account_id", sa.String(length=64), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("branch_id", sa.String(length=64), nullable=False),
        sa.Column("participant_id", sa.String(length=64), nullable=False),
        sa.Column("model_run_id", sa.String(length=64), nullable=True),
        sa.Column("runtime_kind", sa.Text(), nullable=False),
        sa.Column("provider_route", sa.Text(), nullable=False),
        sa.Column("generation_at", postgresql.TIMESTAMP(timezone=True), nullable=False),
        sa.Column("policy_version", sa.Text(), nullable=False),
        sa.Column("assembler_version", sa.Text(), nullable=False),
        sa.Column("snapshot_seq", sa.BigInteger(), nullable=False),
        sa.Column("legacy_message_count", sa.BigInteger(), nullable=False),
        sa.Column("assembled_message_count", sa.BigInteger(), nullable=False),
        sa.Column("legacy_tokens", sa.BigInteger(), nullable=False),
        sa.Column("assembled_tokens", sa.BigInteger(), nullable=False),
        sa.Column("token_budget", sa.BigInteger(), nullable=False),
        sa.Column("selected_refs", postgresql.ARRAY(sa.Text()), server_default=sa.text("'{}'"), nullable=False),
        sa.Column("rehydrated_refs", postgresql.ARRAY(sa.Text()), server_default=sa.text("'{}'"), nullable=False),
        sa.Column(
            "omitted_counts",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
        sa.Column("content_sha256", sa.Text(), nullable=False),
        sa.Column(
            "messages", postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'[]'::jsonb"), nullable=False
        ),
        sa.Column("graph_query_ms", sa.Double(), server_default=sa.text("0"), nullable=False),
        sa.Column("policy_ms", sa.Double(), server_default=sa.text("0"), nullable=False),
        sa.Column("serialise_ms", sa.Double(), server_default=sa.text("0"), nullable=False),
        sa.Column("created_at", postgresql.TIMESTAMP(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint(
            "runtime_kind IN ('branch_send', 'chat', 'discussion', 'multi_model', 'parent_resume', 'scheduled_job', 'subagent_child')",
            name=op.f("ck_context_assemblies_runtime_kind"),
        ),
        sa.ForeignKeyConstraint(
            ["account_id", "conversation_id", "branch_id"],
            ["branches.account_id", "branches.conversation_id", "branches.id"],
            name=op.f("fk_context_assemblies_branch_id"),
        ),
        sa.ForeignKeyConstraint(
            ["account_id", "conversation_id", "model_run_id"],
            ["model_runs.account_id", "model_runs.conversation_id", "model_runs.id"],
            name=op.f("fk_context_assemblies_model_run_id"),
        ),
        sa.ForeignKeyConstraint(
            ["account_id", "conversation_id", "participant_id"],
            ["participants.account_id", "participants.conversation_id", "participants.id"],
            name=op.f("fk_context_assemblies_participant_id"),
        ),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.id"], name=op.f("fk_context_assemblies_account_id")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_context_assemblies")),
        sa.UniqueConstraint(
            "account_id", "conversation_id", "id", name=op.f("uq_context_assemblies_account_id_conversation_id_id")
        ),
    )
    op.create_index(
        "ix_context_assemblies_account_id_conversation_id_created_at",
        "context_assemblies",
        ["account_id", "conversation_id", "created_at"],
        unique=False,
    )
    op.create_index(
        "ix_context_assemblies_account_id_model_run_id",
        "context_assemblies",
        ["account_id", "model_run_id"],
        unique=False,
    )
    op.create_table(
        "continuation_checkpoints",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("account_id", sa.String(length=64), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("branch_id", sa.String(length=64), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("participant_id", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column(
            "state", postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'{}'::jsonb"), nullable=False
        ),
        sa.Column("references", postgresql.ARRAY(sa.String(length=64)), server_default=sa.text("'{}'"), nullable=False),
        sa.Column("model_run_id", sa.String(length=64), nullable=True),
        sa.Column("visibility", sa.Text(), server_default="participant_private", nullable=False),
        sa.Column("privacy", sa.Text(), server_default="user", nullable=False),
        sa.Column("created_at", postgresql.TIMESTAMP(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint(
            "kind IN ('deferred_wait', 'parent_resume', 'subagent_batch', 'tool_loop')",
            name=op.f("ck_continuation_checkpoints_kind"),
        ),
        sa.CheckConstraint(
            "privacy IN ('google_derived', 'oauth', 'public', 'secret_adjacent', 'user')",
            name=op.f("ck_continuation_checkpoints_privacy"),
        ),
        sa.CheckConstraint(
            "visibility IN ('audit_only', 'branch', 'conversation', 'participant_private')",
            name=op.f("ck_continuation_checkpoints_visibility"),
        ),
        sa.ForeignKeyConstraint(
            ["account_id", "conversation_id", "branch_id"],
            ["branches.account_id", "branches.conversation_id", "branches.id"],
            name=op.f("fk_continuation_checkpoints_branch_id"),
        ),
        sa.ForeignKeyConstraint(
            ["account_id", "conversation_id", "model_run_id"],
            ["model_runs.account_id", "model_runs.conversation_id", "model_runs.id"],
            name=op.f("fk_continuation_checkpoints_model_run_id"),
        ),
        sa.ForeignKeyConstraint(
            ["account_id", "conversation_id", "participant_id"],
            ["participants.account_id", "participants.conversation_id", "participants.id"],
            name=op.f("fk_continuation_checkpoints_participant_id"),
        ),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.id"], name=op.f("fk_continuation_checkpoints_account_id")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_continuation_checkpoints")),
    )
    op.create_index(
        "ix_continuation_checkpoints_node",
        "continuation_checkpoints",
        ["account_id", "conversation_id", "branch_id", "seq"],
        unique=False,
    )
    op.create_index(
        "ix_continuation_checkpoints_scope",
        "continuation_checkpoints",
        ["account_id", "conversation_id", "seq"],
        unique=False,
        postgresql_where=sa.text("visibility = 'conversation'"),
    )
    op.create_table(
        "messages",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("account_id", sa.String(length=64), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("branch_id", sa.String(length=64), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("role", sa.Text(), nullable=False),
        sa.Column("content", sa.Text(), server_default="", nullable=False),
        sa.Column("author_participant_id", sa.String(length=64), nullable=True),
        sa.Column("speaker_label", sa.Text(), nullable=True),
        sa.Column("is_directive", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("model_run_id", sa.String(length=64), nullable=True),
        sa.Column("visibility", sa.Text(), server_default="branch", nullable=False),
        sa.Column(
            "shared_with", postgresql.ARRAY(sa.String(length=64)), server_default=sa.text("'{}'"), nullable=False
        ),
        sa.Column(
            "tool_calls", postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'[]'::jsonb"), nullable=False
        ),
        sa.Column("created_at", postgresql.TIMESTAMP(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("role IN ('assistant', 'system', 'tool', 'user')", name=op.f("ck_messages_role")),
        sa.CheckConstraint(
            "visibility IN ('audit_only', 'branch', 'conversation', 'participant_private')",
            name=op.f("ck_messages_visibility"),
        ),
        sa.ForeignKeyConstraint(
            ["account_id", "conversation_id", "author_participant_id"],
            ["participants.account_id", "participants.conversation_id", "participants.id"],
            name=op.f("fk_messages_author_participant_id"),
        ),
        sa.ForeignKeyConstraint(
            ["account_id", "conversation_id", "branch_id"],
            ["branches.account_id", "branches.conversation_id", "branches.id"],
            name=op.f("fk_messages_branch_id"),
        ),
        sa.ForeignKeyConstraint(
            ["account_id", "conversation_id", "model_run_id"],
            ["model_runs.account_id", "model_runs.conversation_id", "model_runs.id"],
            name=op.f("fk_messages_model_run_id"),
        ),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.id"], name=op.f("fk_messages_account_id")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_messages")),
        sa.UniqueConstraint(
            "account_id", "conversation_id", "id", name=op.f("uq_messages_account_id_conversation_id_id")
        ),
    )
    op.create_index(
        "ix_messages_directive",
        "messages",
        ["account_id", "conversation_id", "seq"],
        unique=False,
        postgresql_where=sa.text("is_directive"),
    )
    op.create_index("ix_messages_node", "messages", ["account_id", "conversation_id", "branch_id", "seq"], unique=False)
    op.create_index(
        "ix_messages_scope",
        "messages",
        ["account_id", "conversation_id", "seq"],
        unique=False,
        postgresql_where=sa.text("visibility = 'conversation' OR cardinality(shared_with) > 0"),
    )
    op.create_table(
        "tool_calls",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("account_id", sa.String(length=64), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("branch_id", sa.String(length=64), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("model_run_id", sa.String(length=64), nullable=True),
        sa.Column("participant_id", sa.String(length=64), nullable=False),
        sa.Column("call_id", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column(
            "arguments", postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'{}'::jsonb"), nullable=False
        ),
        sa.Column("status", sa.Text(), server_default="pending", nullable=False),
        sa.Column("retry_critical", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("attempts", sa.BigInteger(), server_default=sa.text("1"), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("waiting_for", sa.Text(), nullable=True),
        sa.Column("visibility", sa.Text(), server_default="branch", nullable=False),
        sa.Column(
            "shared_with", postgresql.ARRAY(sa.String(length=64)), server_default=sa.text("'{}'"), nullable=False
        ),
        sa.Column("privacy", sa.Text(), server_default="user", nullable=False),
        sa.Column("runtime_kind", sa.Text(), server_default="chat", nullable=False),
        sa.Column(
            "history", postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'[]'::jsonb"), nullable=False
        ),
        sa.Column("updated_seq", sa.BigInteger(), nullable=False),
        sa.Column("created_at", postgresql.TIMESTAMP(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", postgresql.TIMESTAMP(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint(
            "privacy IN ('google_derived', 'oauth', 'public', 'secret_adjacent', 'user')",
            name=op.f("ck_tool_calls_privacy"),
        ),
        sa.CheckConstraint(
            "runtime_kind IN ('branch_send', 'chat', 'discussion', 'multi_model', 'parent_resume', 'scheduled_job', 'subagent_child')",
            name=op.f("ck_tool_calls_runtime_kind"),
        ),
        sa.CheckConstraint(
            "status IN ('deferred', 'failed', 'pending', 'retrying', 'succeeded')", name=op.f("ck_tool_calls_status")
        ),
        sa.CheckConstraint(
            "visibility IN ('audit_only', 'branch', 'conversation', 'participant_private')",
            name=op.f("ck_tool_calls_visibility"),
        ),
        sa.CheckConstraint("attempts >= 0", name=op.f("ck_tool_calls_attempts")),
        sa.ForeignKeyConstraint(
            ["account_id", "conversation_id", "branch_id"],
            ["branches.account_id", "branches.conversation_id", "branches.id"],
            name=op.f("fk_tool_calls_branch_id"),
        ),
        sa.ForeignKeyConstraint(
            ["account_id", "conversation_id", "model_run_id"],
            ["model_runs.account_id", "model_runs.conversation_id", "model_runs.id"],
            name=op.f("fk_tool_calls_model_run_id"),
        ),
        sa.ForeignKeyConstraint(
            ["account_id", "conversation_id", "participant_id"],
            ["participants.account_id", "participants.conversation_id", "participants.id"],
            name=op.f("fk_tool_calls_participant_id"),
        ),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.id"], name=op.f("fk_tool_calls_account_id")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tool_calls")),
        sa.UniqueConstraint("account_id", "call_id", name=op.f("uq_tool_calls_account_id_call_id")),
        sa.UniqueConstraint(
            "account_id", "conversation_id", "id", name=op.f("uq_tool_calls_account_id_conversation_id_id")
        ),
    )
    op.create_index(
        "ix_tool_calls_node", "tool_calls", ["account_id", "conversation_id", "branch_id", "seq"], unique=False
    )
    op.create_index(
        "ix_tool_calls_pinned",
        "tool_calls",
        ["account_id", "conversation_id", "seq"],
        unique=False,
        postgresql_where=sa.text("status IN ('deferred', 'failed', 'pending', 'retrying') OR retry_critical"),
    )
    op.create_index(
        "ix_tool_calls_scope",
        "tool_calls",
        ["account_id", "conversation_id", "seq"],
        unique=False,
        postgresql_where=sa.text("visibility = 'conversation' OR cardinality(shared_with) > 0"),
    )
    op.create_index(
        "ix_tool_calls_updated", "tool_calls", ["account_id", "conversation_id", "updated_seq"], unique=False
    )
    op.create_table(
        "tool_memories",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("account_id", sa.String(length=64), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("branch_id", sa.String(length=64), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("owner_participant_id", sa.String(length=64), nullable=False),
        sa.Column("model_run_id", sa.String(length=64), nullable=True),
        sa.Column("runtime_kind", sa.Text(), server_default="chat", nullable=False),
        sa.Column(
            "source_artifact_ids",
            postgresql.ARRAY(sa.String(length=64)),
            server_default=sa.text("'{}'"),
            nullable=False,
        ),
        sa.Column("source_tool", sa.Text(), nullable=False),
        sa.Column("subject_key", sa.Text(), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column(
            "payload", postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'{}'::jsonb"), nullable=False
        ),
        sa.Column("confidence", sa.Double(), server_default=sa.text("1.0"), nullable=False),
        sa.Column("confidence_source", sa.Text(), server_default="derived", nullable=False),
        sa.Column("rationale", sa.Text(), server_default="", nullable=False),
        sa.Column("limitations", sa.Text(), server_default="", nullable=False),
        sa.Column("visibility", sa.Text(), nullable=False),
        sa.Column(
            "shared_with", postgresql.ARRAY(sa.String(length=64)), server_default=sa.text("'{}'"), nullable=False
        ),
        sa.Column("privacy", sa.Text(), nullable=False),
        sa.Column("freshness", sa.Text(), nullable=False),
        sa.Column("observed_at", postgresql.TIMESTAMP(timezone=True), nullable=False),
        sa.Column("stale_after", postgresql.TIMESTAMP(timezone=True), nullable=True),
        sa.Column("revalidate_with", postgresql.ARRAY(sa.Text()), server_default=sa.text("'{}'"), nullable=False),
        sa.Column(
            "locators", postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'[]'::jsonb"), nullable=False
        ),
        sa.Column("resolution", sa.Text(), server_default="resolved", nullable=False),
        sa.Column("repair_attempts", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column(
            "conflicts_with", postgresql.ARRAY(sa.String(length=64)), server_default=sa.text("'{}'"), nullable=False
        ),
        sa.Column("supersedes", postgresql.ARRAY(sa.String(length=64)), server_default=sa.text("'{}'"), nullable=False),
        sa.Column("superseded_by", sa.String(length=64), nullable=True),
        sa.Column("superseded_seq", sa.BigInteger(), nullable=True),
        sa.Column("promotion", sa.Text(), server_default="none", nullable=False),
        sa.Column(
            "promoted_from", postgresql.ARRAY(sa.String(length=64)), server_default=sa.text("'{}'"), nullable=False
        ),
        sa.Column("created_at", postgresql.TIMESTAMP(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint(
            "freshness IN ('bounded', 'durable', 'permanent', 'session', 'volatile')",
            name=op.f("ck_tool_memories_freshness"),
        ),
        sa.CheckConstraint(
            "privacy IN ('google_derived', 'oauth', 'public', 'secret_adjacent', 'user')",
            name=op.f("ck_tool_memories_privacy"),
        ),
        sa.CheckConstraint("promotion IN ('never', 'none', 'on_completion')", name=op.f("ck_tool_memories_promotion")),
        sa.CheckConstraint(
            "resolution IN ('hash_mismatch', 'missing_source', 'repaired', 'resolved')",
            name=op.f("ck_tool_memories_resolution"),
        ),
        sa.CheckConstraint(
            "runtime_kind IN ('branch_send', 'chat', 'discussion', 'multi_model', 'parent_resume', 'scheduled_job', 'subagent_child')",
            name=op.f("ck_tool_memories_runtime_kind"),
        ),
        sa.CheckConstraint(
            "visibility IN ('audit_only', 'branch', 'conversation', 'participant_private')",
            name=op.f("ck_tool_memories_visibility"),
        ),
        sa.CheckConstraint(
            "superseded_by IS NULL OR superseded_by <> id", name=op.f("ck_tool_memories_not_self_superseded")
        ),
        sa.ForeignKeyConstraint(
            ["account_id", "conversation_id", "branch_id"],
            ["branches.account_id", "branches.conversation_id", "branches.id"],
            name=op.f("fk_tool_memories_branch_id"),
        ),
        sa.ForeignKeyConstraint(
            ["account_id", "conversation_id", "model_run_id"],
            ["model_runs.account_id", "model_runs.conversation_id", "model_runs.id"],
            name=op.f("fk_tool_memories_model_run_id"),
        ),
        sa.ForeignKeyConstraint(
            ["account_id", "conversation_id", "owner_participant_id"],
            ["participants.account_id", "participants.conversation_id", "participants.id"],
            name=op.f("fk_tool_memories_owner_participant_id"),
        ),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.id"], name=op.f("fk_tool_memories_account_id")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tool_memories")),
    )
    op.create_index(
        "ix_tool_memories_node", "tool_memories", ["account_id", "conversation_id", "branch_id", "seq"], unique=False
    )
    op.create_index(
        "ix_tool_memories_scope",
        "tool_memories",
        ["account_id", "conversation_id", "seq"],
        unique=False,
        postgresql_where=sa.text("visibility = 'conversation' OR cardinality(shared_with) > 0"),
    )
    op.create_index(
        "ix_tool_memories_subject", "tool_memories", ["account_id", "conversation_id", "subject_key"], unique=False
    )
    op.create_table(
        "policy_decisions",
        sa.Column("context_assembly_id", sa.String(length=64), nullable=False),
        sa.Column("ordinal", sa.BigInteger(), nullable=False),
        sa.Column("account_id", sa.String(length=64), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("subject_ref", sa.Text(), nullable=False),
        sa.Column("outcome", sa.Text(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("omission", sa.Text(), nullable=True),
        sa.Column("policy_version", sa.Text(), nullable=False),
        sa.CheckConstraint(
            "omission IS NULL OR omission IN ('audit_only', 'budget', 'not_promoted', 'not_visible', 'outside_lineage', 'outside_window', 'privacy_route', 'raw_byte_budget', 'raw_not_requested', 'raw_privacy', 'resolved_elsewhere', 'stale', 'superseded')",
            name=op.f("ck_policy_decisions_omission"),
        ),
        sa.CheckConstraint(
            "outcome IN ('denied', 'included', 'marked_stale', 'noted', 'omitted', 'protected', 'rehydrated')",
            name=op.f("ck_policy_decisions_outcome"),
        ),
        sa.ForeignKeyConstraint(
            ["account_id", "conversation_id", "context_assembly_id"],
            ["context_assemblies.account_id", "context_assemblies.conversation_id", "context_assemblies.id"],
            name=op.f("fk_policy_decisions_context_assembly_id"),
        ),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.id"], name=op.f("fk_policy_decisions_account_id")),
        sa.PrimaryKeyConstraint("context_assembly_id", "ordinal", name=op.f("pk_policy_decisions")),
    )
    op.create_index(
        "ix_policy_decisions_account_id_subject_ref", "policy_decisions", ["account_id", "subject_ref"], unique=False
    )
    op.create_table(
        "tool_artifacts",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("account_id", sa.String(length=64), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("tool_call_id", sa.String(length=64), nullable=False),
        sa.Column("call_id", sa.Text(), nullable=False),
        sa.Column("tool_name", sa.Text(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("owner_participant_id", sa.String(length=64), nullable=False),
        sa.Column("model_run_id", sa.String(length=64), nullable=True),
        sa.Column("runtime_kind", sa.Text(), server_default="chat", nullable=False),
        sa.Column("branch_id", sa.String(length=64), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("visibility", sa.Text(), nullable=False),
        sa.Column(
            "shared_with", postgresql.ARRAY(sa.String(length=64)), server_default=sa.text("'{}'"), nullable=False
        ),
        sa.Column("privacy", sa.Text(), nullable=False),
        sa.Column("content_type", sa.Text(), nullable=False),
        sa.Column(
            "arguments", postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'{}'::jsonb"), nullable=False
        ),
        sa.Column("sha256", sa.Text(), nullable=False),
        sa.Column("result_bytes", sa.BigInteger(), nullable=False),
        sa.Column("arguments_bytes", sa.BigInteger(), nullable=False),
        sa.Column("result_tokens", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("storage", sa.Text(), nullable=False),
        sa.Column("storage_key", sa.Text(), nullable=True),
        sa.Column("inline_payload", sa.LargeBinary(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column(
            "active_skills",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'[]'::jsonb"),
            nullable=False,
        ),
        sa.Column("tool_profile", sa.Text(), nullable=True),
        sa.Column("provider", sa.Text(), nullable=True),
        sa.Column("model", sa.Text(), nullable=True),
        sa.Column(
            "runtime_meta",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
        sa.Column("tool_version", sa.Text(), nullable=True),
        sa.Column("captured_at", postgresql.TIMESTAMP(timezone=True), nullable=False),
        sa.Column("promotion", sa.Text(), server_default="none", nullable=False),
        sa.Column("created_at", postgresql.TIMESTAMP(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint(
            "(storage = 'inline' AND inline_payload IS NOT NULL) OR (storage = 'object' AND storage_key IS NOT NULL)",
            name=op.f("ck_tool_artifacts_payload_location"),
        ),
        sa.CheckConstraint(
            "privacy IN ('google_derived', 'oauth', 'public', 'secret_adjacent', 'user')",
            name=op.f("ck_tool_artifacts_privacy"),
        ),
        sa.CheckConstraint("promotion IN ('never', 'none', 'on_completion')", name=op.f("ck_tool_artifacts_promotion")),
        sa.CheckConstraint(
            "runtime_kind IN ('branch_send', 'chat', 'discussion', 'multi_model', 'parent_resume', 'scheduled_job', 'subagent_child')",
            name=op.f("ck_tool_artifacts_runtime_kind"),
        ),
        sa.CheckConstraint(
            "status IN ('deferred', 'failed', 'pending', 'retrying', 'succeeded')",
            name=op.f("ck_tool_artifacts_status"),
        ),
        sa.CheckConstraint("storage IN ('inline', 'object')", name=op.f("ck_tool_artifacts_storage")),
        sa.CheckConstraint(
            "visibility IN ('audit_only', 'branch', 'conversation', 'participant_private')",
            name=op.f("ck_tool_artifacts_visibility"),
        ),
        sa.CheckConstraint("char_length(sha256) = 64", name=op.f("ck_tool_artifacts_sha256")),
        sa.ForeignKeyConstraint(
            ["account_id", "conversation_id", "branch_id"],
            ["branches.account_id", "branches.conversation_id", "branches.id"],
            name=op.f("fk_tool_artifacts_branch_id"),
        ),
        sa.ForeignKeyConstraint(
            ["account_id", "conversation_id", "model_run_id"],
            ["model_runs.account_id", "model_runs.conversation_id", "model_runs.id"],
            name=op.f("fk_tool_artifacts_model_run_id"),
        ),
        sa.ForeignKeyConstraint(
            ["account_id", "conversation_id", "owner_participant_id"],
            ["participants.account_id", "participants.conversation_id", "participants.id"],
            name=op.f("fk_tool_artifacts_owner_participant_id"),
        ),
        sa.ForeignKeyConstraint(
            ["account_id", "conversation_id", "tool_call_id"],
            ["tool_calls.account_id", "tool_calls.conversation_id", "tool_calls.id"],
            name=op.f("fk_tool_artifacts_tool_call_id"),
        ),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.id"], name=op.f("fk_tool_artifacts_account_id")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tool_artifacts")),
        sa.UniqueConstraint("tool_call_id", name=op.f("uq_tool_artifacts_tool_call_id")),
    )
    op.create_index("ix_tool_artifacts_account_id_sha256", "tool_artifacts", ["account_id", "sha256"], unique=False)
    op.create_index(
        "ix_tool_artifacts_node", "tool_artifacts", ["account_id", "conversation_id", "branch_id", "seq"], unique=False
    )
    op.create_index(
        "ix_tool_artifacts_scope",
        "tool_artifacts",
        ["account_id", "conversation_id", "seq"],
        unique=False,
        postgresql_where=sa.text("visibility = 'conversation' OR cardinality(shared_with) > 0"),
    )

    # Foreign keys that close reference cycles between tables.
    op.create_foreign_key(
        op.f("fk_conversations_root_branch_id"),
        "conversations",
        "branches",
        ["account_id", "id", "root_branch_id"],
        ["account_id", "conversation_id", "id"],
    )
    op.create_foreign_key(
        op.f("fk_branches_fork_message_id"),
        "branches",
        "messages",
        ["account_id", "conversation_id", "fork_message_id"],
        ["account_id", "conversation_id", "id"],
    )
    op.create_foreign_key(
        op.f("fk_model_runs_message_id"),
        "model_runs",
        "messages",
        ["account_id", "conversation_id", "message_id"],
        ["account_id", "conversation_id", "id"],
    )
    op.create_foreign_key(
        op.f("fk_model_runs_context_assembly_id"),
        "model_runs",
        "context_assemblies",
        ["account_id", "conversation_id", "context_assembly_id"],
        ["account_id", "conversation_id", "id"],
    )
    op.execute(BRANCHES_NO_CYCLE_FUNCTION)
    op.execute(BRANCHES_NO_CYCLE_TRIGGER)


def downgrade() -> None:
    """Downgrade schema."""
    op.execute("DROP TRIGGER IF EXISTS branches_no_cycle ON branches")
    op.execute("DROP FUNCTION IF EXISTS branches_no_cycle()")
    op.drop_constraint(op.f("fk_model_runs_context_assembly_id"), "model_runs", type_="foreignkey")
    op.drop_constraint(op.f("fk_model_runs_message_id"), "model_runs", type_="foreignkey")
    op.drop_constraint(op.f("fk_branches_fork_message_id"), "branches", type_="foreignkey")
    op.drop_constraint(op.f("fk_conversations_root_branch_id"), "conversations", type_="foreignkey")
    op.drop_index(
        "ix_tool_artifacts_scope",
        table_name="tool_artifacts",
        postgresql_where=sa.text("visibility = 'conversation' OR cardinality(shared_with) > 0"),
    )
    op.drop_index("ix_tool_artifacts_node", table_name="tool_artifacts")
    op.drop_index("ix_tool_artifacts_account_id_sha256", table_name="tool_artifacts")
    op.drop_table("tool_artifacts")
    op.drop_index("ix_policy_decisions_account_id_subject_ref", table_name="policy_decisions")
    op.drop_table("policy_decisions")
    op.drop_index("ix_tool_memories_subject", table_name="tool_memories")
    op.drop_index(
        "ix_tool_memories_scope",
        table_name="tool_memories",
        postgresql_where=sa.text("visibility = 'conversation' OR cardinality(shared_with) > 0"),
    )
    op.drop_index("ix_tool_memories_node", table_name="tool_memories")
    op.drop_table("tool_memories")
    op.drop_index("ix_tool_calls_updated", table_name="tool_calls")
    op.drop_index(
        "ix_tool_calls_scope",
        table_name="tool_calls",
        postgresql_where=sa.text("visibility = 'conversation' OR cardinality(shared_with) > 0"),
    )
    op.drop_index(
        "ix_tool_calls_pinned",
        table_name="tool_calls",
        postgresql_where=sa.text("status IN ('deferred', 'failed', 'pending', 'retrying') OR retry_critical"),
    )
    op.drop_index("ix_tool_calls_node", table_name="tool_calls")
    op.drop_table("tool_calls")
    op.drop_index(
        "ix_messages_scope",
        table_name="messages",
        postgresql_where=sa.text("visibility = 'conversation' OR cardinality(shared_with) > 0"),
    )
    op.drop_index("ix_messages_node", table_name="messages")
    op.drop_index("ix_messages_directive", table_name="messages", postgresql_where=sa.text("is_directive"))
    op.drop_table("messages")
    op.drop_index(
        "ix_continuation_checkpoints_scope",
        table_name="continuation_checkpoints",
        postgresql_where=sa.text("visibility = 'conversation'"),
    )
    op.drop_index("ix_continuation_checkpoints_node", table_name="continuation_checkpoints")
    op.drop_table("continuation_checkpoints")
    op.drop_index("ix_context_assemblies_account_id_model_run_id", table_name="context_assemblies")
    op.drop_index("ix_context_assemblies_account_id_conversation_id_created_at", table_name="context_assemblies")
    op.drop_table("context_assemblies")
    op.drop_index(
        "ix_skill_states_scope", table_name="skill_states", postgresql_where=sa.text("visibility = 'conversation'")
    )
    op.drop_index("ix_skill_states_node", table_name="skill_states")
    op.drop_table("skill_states")
    op.drop_index("ix_model_runs_account_id_started_at", table_name="model_runs")
    op.drop_index("ix_model_runs_account_id_conversation_id_started_at", table_name="model_runs")
    op.drop_table("model_runs")
    op.drop_table("participants")
    op.drop_index("ix_branches_account_id_parent_branch_id", table_name="branches")
    op.drop_index("ix_branches_account_id_conversation_id", table_name="branches")
    op.drop_table("branches")
    op.drop_index("ix_user_memories_account_id_seq", table_name="user_memories")
    op.drop_table("user_memories")
    op.drop_index("ix_conversations_account_id_created_at", table_name="conversations")
    op.drop_table("conversations")
    op.drop_table("accounts")
