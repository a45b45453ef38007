"""Conversations and their transcript: accounts, conversations, branches,
participants, messages and model runs.

A conversation is a tree of branches. A branch forked from a parent at a
message sees the parent's nodes up to that message's ``seq`` (``fork_seq``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    CheckConstraint,
    ForeignKeyConstraint,
    Index,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from policy.enums import MessageRole, PrivacyClass, RuntimeKind, VisibilityScope
from store.models.base import (
    LIVE_SCOPE_SQL,
    Base,
    account_column,
    conversation_fk,
    created_at_column,
    enum_check,
    id_array_column,
    id_column,
    node_fk,
)

PARTICIPANT_ROLES = ("assistant", "moderator", "subagent", "user")
"""Values of ``participants.role`` (``ParticipantRecord.role``)."""

MODEL_RUN_STATUSES = ("running", "succeeded", "failed", "cancelled")
"""Values of ``model_runs.status``."""


class Account(Base):
    """A tenant. Every other row belongs to exactly one account."""

    __tablename__ = "accounts"

    id: Mapped[str] = id_column(primary_key=True)
    name: Mapped[str] = mapped_column(server_default="")
    """Display name; informational only."""
    next_user_seq: Mapped[int] = mapped_column(server_default=text("1"))
    """Counter for user memories, which live outside any conversation."""
    created_at: Mapped[datetime] = created_at_column()
    deleting_at: Mapped[datetime | None] = mapped_column()
    """When the account's deletion began (``None``: not being deleted). Once set, the
    ``refuse_deleted_account`` triggers refuse every row inserted for it (migration 0011)."""


class Conversation(Base):
    """A conversation: a tree of branches with one ``seq`` counter."""

    __tablename__ = "conversations"
    __table_args__ = (
        UniqueConstraint("account_id", "id"),
        ForeignKeyConstraint(
            ["account_id", "id", "root_branch_id"],
            ["branches.account_id", "branches.conversation_id", "branches.id"],
            use_alter=True,
        ),
        CheckConstraint("next_seq >= 1", name="next_seq"),
        Index("ix_conversations_account_id_created_at", "account_id", "created_at"),
    )

    id: Mapped[str] = id_column(primary_key=True)
    account_id: Mapped[str] = account_column()
    title: Mapped[str] = mapped_column(server_default="")
    next_seq: Mapped[int] = mapped_column(server_default=text("1"))
    """The ``seq`` the next node of the conversation receives. Allocation is an
    ``UPDATE ... RETURNING`` on this row, so it also serialises writers."""
    root_branch_id: Mapped[str | None] = id_column(nullable=True)
    created_at: Mapped[datetime] = created_at_column()


class Branch(Base):
    """One line of the conversation tree."""

    __tablename__ = "branches"
    __table_args__ = (
        UniqueConstraint("account_id", "conversation_id", "id"),
        conversation_fk(),
        node_fk("parent_branch_id", "branches"),
        node_fk("fork_message_id", "messages", use_alter=True),
        CheckConstraint("(parent_branch_id IS NULL) = (fork_seq IS NULL)", name="fork_point"),
        CheckConstraint("parent_branch_id IS NULL OR parent_branch_id <> id", name="not_own_parent"),
        Index("ix_branches_account_id_parent_branch_id", "account_id", "parent_branch_id"),
        Index("ix_branches_account_id_conversation_id", "account_id", "conversation_id"),
        Index("ix_branches_account_id_fork_message_id", "account_id", "fork_message_id"),
    )

    id: Mapped[str] = id_column(primary_key=True)
    account_id: Mapped[str] = account_column()
    conversation_id: Mapped[str] = id_column()
    parent_branch_id: Mapped[str | None] = id_column(nullable=True)
    fork_message_id: Mapped[str | None] = id_column(nullable=True)
    fork_seq: Mapped[int | None]
    """``seq`` of the fork message: the last parent node this branch sees."""
    name: Mapped[str] = mapped_column(server_default="")
    created_at: Mapped[datetime] = created_at_column()


class Participant(Base):
    """A model, persona or the user taking part in a conversation."""

    __tablename__ = "participants"
    __table_args__ = (
        UniqueConstraint("account_id", "conversation_id", "id"),
        conversation_fk(),
        node_fk("parent_participant_id", "participants"),
        enum_check("role", PARTICIPANT_ROLES),
    )

    id: Mapped[str] = id_column(primary_key=True)
    account_id: Mapped[str] = account_column()
    conversation_id: Mapped[str] = id_column()
    name: Mapped[str]
    role: Mapped[str] = mapped_column(server_default="assistant")
    provider: Mapped[str | None]
    model: Mapped[str | None]
    system_prompt: Mapped[str] = mapped_column(server_default="")
    parent_participant_id: Mapped[str | None] = id_column(nullable=True)
    config: Mapped[dict[str, Any]] = mapped_column(server_default=text("'{}'::jsonb"))
    created_at: Mapped[datetime] = created_at_column()


class Message(Base):
    """A transcript node."""

    __tablename__ = "messages"
    __table_args__ = (
        UniqueConstraint("account_id", "conversation_id", "id"),
        node_fk("branch_id", "branches"),
        node_fk("author_participant_id", "participants"),
        node_fk("model_run_id", "model_runs"),
        enum_check("role", MessageRole),
        enum_check("visibility", VisibilityScope),
        enum_check("privacy", PrivacyClass),
        Index("ix_messages_node", "account_id", "conversation_id", "branch_id", "seq"),
        Index("ix_messages_account_id_model_run_id", "account_id", "model_run_id"),
        Index(
            "ix_messages_scope",
            "account_id",
            "conversation_id",
            "seq",
            postgresql_where=text(LIVE_SCOPE_SQL),
        ),
        Index(
            "ix_messages_directive",
            "account_id",
            "conversation_id",
            "seq",
            postgresql_where=text("is_directive"),
        ),
    )

    id: Mapped[str] = id_column(primary_key=True)
    account_id: Mapped[str] = account_column()
    conversation_id: Mapped[str] = id_column()
    branch_id: Mapped[str] = id_column()
    seq: Mapped[int]
    role: Mapped[str]
    content: Mapped[str] = mapped_column(server_default="")
    author_participant_id: Mapped[str | None] = id_column(nullable=True)
    speaker_label: Mapped[str | None]
    is_directive: Mapped[bool] = mapped_column(server_default=text("false"))
    model_run_id: Mapped[str | None] = id_column(nullable=True)
    visibility: Mapped[str] = mapped_column(server_default=VisibilityScope.BRANCH.value)
    shared_with: Mapped[list[str]] = id_array_column()
    tool_calls: Mapped[list[Any]] = mapped_column(server_default=text("'[]'::jsonb"))
    """``[{call_id, name, arguments}]`` as the assistant wrote them."""
    privacy: Mapped[str] = mapped_column(server_default=PrivacyClass.USER.value)
    """A model's message is as strict as what its run was shown (``store.taint.run_privacy``)."""
    created_at: Mapped[datetime] = created_at_column()


class ModelRun(Base):
    """One model call (or a resumed tool loop) made for a participant."""

    __tablename__ = "model_runs"
    __table_args__ = (
        UniqueConstraint("account_id", "conversation_id", "id"),
        node_fk("branch_id", "branches"),
        node_fk("participant_id", "participants"),
        node_fk("message_id", "messages", use_alter=True),
        node_fk("parent_model_run_id", "model_runs"),
        node_fk("context_assembly_id", "context_assemblies", use_alter=True),
        enum_check("runtime_kind", RuntimeKind),
        enum_check("status", MODEL_RUN_STATUSES),
        Index("ix_model_runs_account_id_conversation_id_started_at", "account_id", "conversation_id", "started_at"),
        Index("ix_model_runs_account_id_started_at", "account_id", "started_at"),
        # Foreign keys need an index on their referencing columns, or deleting the referenced row scans this table.
        Index("ix_model_runs_account_id_message_id", "account_id", "message_id"),
        Index("ix_model_runs_account_id_context_assembly_id", "account_id", "context_assembly_id"),
        Index("ix_model_runs_account_id_parent_model_run_id", "account_id", "parent_model_run_id"),
        Index("ix_model_runs_account_id_branch_id", "account_id", "branch_id"),
    )

    id: Mapped[str] = id_column(primary_key=True)
    account_id: Mapped[str] = account_column()
    conversation_id: Mapped[str] = id_column()
    branch_id: Mapped[str] = id_column()
    participant_id: Mapped[str] = id_column()
    message_id: Mapped[str | None] = id_column(nullable=True)
    """The assistant message the run produced, once finished."""
    provider: Mapped[str | None]
    model: Mapped[str | None]
    runtime_kind: Mapped[str] = mapped_column(server_default=RuntimeKind.CHAT.value)
    workflow_id: Mapped[str | None]
    parent_model_run_id: Mapped[str | None] = id_column(nullable=True)
    status: Mapped[str] = mapped_column(server_default="running")
    context_assembly_id: Mapped[str | None] = id_column(nullable=True)
    error: Mapped[str | None]
    usage: Mapped[dict[str, Any]] = mapped_column(server_default=text("'{}'::jsonb"))
    started_at: Mapped[datetime] = created_at_column()
    finished_at: Mapped[datetime | None]
