"""What the agent knows and keeps between turns: tool memories, user
memories, skill states and continuation checkpoints."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import CheckConstraint, Double, Index, String, UniqueConstraint, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Mapped, mapped_column

from policy.enums import (
    FreshnessClass,
    PrivacyClass,
    PromotionPolicy,
    ResolutionStatus,
    RuntimeKind,
    VisibilityScope,
)
from policy.retention import RetentionClass, RetentionState
from store.models.base import (
    LIVE_SCOPE_SQL,
    RETENTION_DUE_SQL,
    Base,
    account_column,
    created_at_column,
    enum_check,
    id_array_column,
    id_column,
    node_fk,
)

CHECKPOINT_KINDS = ("deferred_wait", "parent_resume", "subagent_batch", "tool_loop")
"""Values of ``continuation_checkpoints.kind`` (``CheckpointRecord.kind``)."""


class ToolMemory(Base):
    """Compact, model-facing knowledge derived from artifacts (``ToolMemoryRecord``)."""

    __tablename__ = "tool_memories"
    __table_args__ = (
        enum_check("retention", RetentionClass),
        enum_check("retention_state", RetentionState),
        CheckConstraint("retention_days >= 0", name="retention_days"),
        node_fk("branch_id", "branches"),
        node_fk("owner_participant_id", "participants"),
        node_fk("model_run_id", "model_runs"),
        enum_check("runtime_kind", RuntimeKind),
        enum_check("visibility", VisibilityScope),
        enum_check("privacy", PrivacyClass),
        enum_check("freshness", FreshnessClass),
        enum_check("resolution", ResolutionStatus),
        enum_check("promotion", PromotionPolicy),
        CheckConstraint("superseded_by IS NULL OR superseded_by <> id", name="not_self_superseded"),
        Index("ix_tool_memories_node", "account_id", "conversation_id", "branch_id", "seq"),
        Index("ix_tool_memories_scope", "account_id", "conversation_id", "seq", postgresql_where=text(LIVE_SCOPE_SQL)),
        Index("ix_tool_memories_subject", "account_id", "conversation_id", "subject_key"),
        # Write supersession: the memories naming one of a new memory's resources (``&&``).
        Index("ix_tool_memories_resources", "resources", postgresql_using="gin"),
        # Contradiction lookups: live memories asserting one of a new memory's facts (``?|``).
        Index("ix_tool_memories_facts", text("(payload -> 'facts')"), postgresql_using="gin",
              postgresql_where=text("superseded_by IS NULL")),
        Index("ix_tool_memories_account_id_model_run_id", "account_id", "model_run_id"),
        Index("ix_tool_memories_retention_due", "created_at", postgresql_where=text(RETENTION_DUE_SQL)),
    )

    id: Mapped[str] = id_column(primary_key=True)
    account_id: Mapped[str] = account_column()
    conversation_id: Mapped[str] = id_column()
    branch_id: Mapped[str] = id_column()
    seq: Mapped[int]
    owner_participant_id: Mapped[str] = id_column()
    model_run_id: Mapped[str | None] = id_column(nullable=True)
    runtime_kind: Mapped[str] = mapped_column(server_default=RuntimeKind.CHAT.value)
    source_artifact_ids: Mapped[list[str]] = id_array_column()
    source_tool: Mapped[str]
    subject_key: Mapped[str]
    resources: Mapped[list[str]] = mapped_column(ARRAY(String(64)), nullable=False, server_default=text("'{}'"))
    """What the call read (``r:``) or wrote (``w:``), as digests (policy.resources): write supersession."""
    title: Mapped[str]
    summary: Mapped[str]
    payload: Mapped[dict[str, Any]] = mapped_column(server_default=text("'{}'::jsonb"))
    confidence: Mapped[float] = mapped_column(Double, server_default=text("1.0"))
    confidence_source: Mapped[str] = mapped_column(server_default="derived")
    rationale: Mapped[str] = mapped_column(server_default="")
    limitations: Mapped[str] = mapped_column(server_default="")
    visibility: Mapped[str]
    shared_with: Mapped[list[str]] = id_array_column()
    privacy: Mapped[str]
    freshness: Mapped[str]
    observed_at: Mapped[datetime]
    stale_after: Mapped[datetime | None]
    revalidate_with: Mapped[list[str]] = mapped_column(server_default=text("'{}'"))
    locators: Mapped[list[Any]] = mapped_column(server_default=text("'[]'::jsonb"))
    """``[Locator.model_dump()]``."""
    resolution: Mapped[str] = mapped_column(server_default=ResolutionStatus.RESOLVED.value)
    resolution_history: Mapped[list[Any]] = mapped_column(server_default=text("'[]'::jsonb"))
    """Every change of ``resolution``, oldest first: ``{"seq": <seq the change took>, "replaced": <status
    before it>}``, so a snapshot before a change reads the status it had (``store.convert.resolution_at``)."""
    repair_attempts: Mapped[int] = mapped_column(server_default=text("0"))
    conflicts_with: Mapped[list[str]] = id_array_column()
    supersedes: Mapped[list[str]] = id_array_column()
    superseded_by: Mapped[str | None] = id_column(nullable=True)
    superseded_seq: Mapped[int | None]
    """``seq`` of the superseding memory: a snapshot taken before it was
    written still sees this memory as live."""
    promotion: Mapped[str] = mapped_column(server_default=PromotionPolicy.NONE.value)
    promoted_from: Mapped[list[str]] = id_array_column()
    created_at: Mapped[datetime] = created_at_column()
    retention: Mapped[str] = mapped_column(server_default=RetentionClass.KEEP.value)
    """Retention class (:mod:`policy.retention`), set when the row is written."""
    retention_days: Mapped[int] = mapped_column(server_default=text("0"))
    """Days after ``created_at`` the class applies."""
    retention_state: Mapped[str] = mapped_column(server_default=RetentionState.LIVE.value)
    """What retention has done to the row so far."""


class UserMemory(Base):
    """Personalisation about the user, account-wide (``UserMemoryRecord``)."""

    __tablename__ = "user_memories"
    __table_args__ = (
        enum_check("privacy", PrivacyClass),
        Index("ix_user_memories_account_id_seq", "account_id", "seq"),
    )

    id: Mapped[str] = id_column(primary_key=True)
    account_id: Mapped[str] = account_column()
    seq: Mapped[int]
    """From the account's counter: user memories belong to no conversation."""
    text: Mapped[str]
    privacy: Mapped[str] = mapped_column(server_default=PrivacyClass.USER.value)
    participant_id: Mapped[str | None] = id_column(nullable=True)
    """Restricts the memory to one participant (no foreign key: participants
    belong to a conversation, user memories to the account)."""
    created_at: Mapped[datetime] = created_at_column()


class SkillState(Base):
    """The state of one skill for one participant on one branch."""

    __tablename__ = "skill_states"
    __table_args__ = (
        UniqueConstraint("account_id", "participant_id", "skill", "branch_id"),
        node_fk("branch_id", "branches"),
        node_fk("participant_id", "participants"),
        enum_check("visibility", VisibilityScope),
        enum_check("privacy", PrivacyClass),
        Index("ix_skill_states_node", "account_id", "conversation_id", "branch_id", "seq"),
        Index(
            "ix_skill_states_scope",
            "account_id",
            "conversation_id",
            "seq",
            postgresql_where=text("visibility = 'conversation'"),
        ),
    )

    id: Mapped[str] = id_column(primary_key=True)
    account_id: Mapped[str] = account_column()
    conversation_id: Mapped[str] = id_column()
    branch_id: Mapped[str] = id_column()
    seq: Mapped[int]
    """Re-allocated on every update: the state is as new as its last write."""
    participant_id: Mapped[str] = id_column()
    skill: Mapped[str]
    state: Mapped[dict[str, Any]] = mapped_column(server_default=text("'{}'::jsonb"))
    active: Mapped[bool] = mapped_column(server_default=text("true"))
    visibility: Mapped[str] = mapped_column(server_default=VisibilityScope.PARTICIPANT_PRIVATE.value)
    privacy: Mapped[str] = mapped_column(server_default=PrivacyClass.USER.value)
    created_at: Mapped[datetime] = created_at_column()
    updated_at: Mapped[datetime] = created_at_column()
    history: Mapped[list[Any]] = mapped_column(server_default=text("'[]'::jsonb"))
    """The versions this row replaced, oldest first: ``{"seq", "state", "active", "visibility", "privacy"}``
    as each was written, so a snapshot before a rewrite reads the state it had (``store.skills.skill_state_at``)."""


class ContinuationCheckpoint(Base):
    """A deterministic continuation point (``CheckpointRecord``)."""

    __tablename__ = "continuation_checkpoints"
    __table_args__ = (
        node_fk("branch_id", "branches"),
        node_fk("participant_id", "participants"),
        node_fk("model_run_id", "model_runs"),
        enum_check("kind", CHECKPOINT_KINDS),
        enum_check("visibility", VisibilityScope),
        enum_check("privacy", PrivacyClass),
        Index("ix_continuation_checkpoints_node", "account_id", "conversation_id", "branch_id", "seq"),
        Index("ix_continuation_checkpoints_account_id_model_run_id", "account_id", "model_run_id"),
        Index(
            "ix_continuation_checkpoints_scope",
            "account_id",
            "conversation_id",
            "seq",
            postgresql_where=text("visibility = 'conversation'"),
        ),
    )

    id: Mapped[str] = id_column(primary_key=True)
    account_id: Mapped[str] = account_column()
    conversation_id: Mapped[str] = id_column()
    branch_id: Mapped[str] = id_column()
    seq: Mapped[int]
    participant_id: Mapped[str] = id_column()
    kind: Mapped[str]
    state: Mapped[dict[str, Any]] = mapped_column(server_default=text("'{}'::jsonb"))
    references: Mapped[list[str]] = id_array_column()
    model_run_id: Mapped[str | None] = id_column(nullable=True)
    visibility: Mapped[str] = mapped_column(server_default=VisibilityScope.PARTICIPANT_PRIVATE.value)
    privacy: Mapped[str] = mapped_column(server_default=PrivacyClass.USER.value)
    created_at: Mapped[datetime] = created_at_column()
