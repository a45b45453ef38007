"""The audit trail of context assembly: what each model call saw, and every
decision the policy took to get there."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import CheckConstraint, Double, Index, PrimaryKeyConstraint, UniqueConstraint, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Mapped, mapped_column

from policy.enums import DecisionOutcome, OmissionReason, RuntimeKind
from policy.retention import RetentionClass, RetentionState
from store.models.base import (
    RETENTION_DUE_SQL,
    Base,
    account_column,
    created_at_column,
    enum_check,
    id_column,
    node_fk,
)
from store.models.types import StoredText


class ContextAssembly(Base):
    """One assembled context (``ContextAssemblyRecord`` plus its boundary)."""

    __tablename__ = "context_assemblies"
    __table_args__ = (
        enum_check("retention", RetentionClass),
        enum_check("retention_state", RetentionState),
        CheckConstraint("retention_days >= 0", name="retention_days"),
        UniqueConstraint("account_id", "conversation_id", "id"),
        node_fk("branch_id", "branches"),
        node_fk("participant_id", "participants"),
        node_fk("model_run_id", "model_runs"),
        enum_check("runtime_kind", RuntimeKind),
        Index(
            "ix_context_assemblies_account_id_conversation_id_created_at",
            "account_id",
            "conversation_id",
            "created_at",
        ),
        Index("ix_context_assemblies_account_id_model_run_id", "account_id", "model_run_id"),
        Index("ix_context_assemblies_retention_due", "created_at", postgresql_where=text(RETENTION_DUE_SQL)),
        Index("ix_context_assemblies_account_id_branch_id", "account_id", "branch_id"),
        # The previous assembly of a participant on a branch: what its next call's epoch continues.
        Index("ix_context_assemblies_participant_latest", "account_id", "branch_id", "participant_id",
              "snapshot_seq"),
    )

    id: Mapped[str] = id_column(primary_key=True)
    account_id: Mapped[str] = account_column()
    conversation_id: Mapped[str] = id_column()
    branch_id: Mapped[str] = id_column()
    participant_id: Mapped[str] = id_column()
    model_run_id: Mapped[str | None] = id_column(nullable=True)
    runtime_kind: Mapped[str]
    provider_route: Mapped[str]
    generation_at: Mapped[datetime]
    """The boundary's logical time (``GenerationBoundary.now``)."""
    policy_version: Mapped[str]
    assembler_version: Mapped[str]
    snapshot_seq: Mapped[int]
    legacy_message_count: Mapped[int]
    assembled_message_count: Mapped[int]
    legacy_tokens: Mapped[int]
    assembled_tokens: Mapped[int]
    token_budget: Mapped[int]
    selected_refs: Mapped[list[str]] = mapped_column(ARRAY(StoredText), server_default=text("'{}'"))
    rehydrated_refs: Mapped[list[str]] = mapped_column(ARRAY(StoredText), server_default=text("'{}'"))
    omitted_counts: Mapped[dict[str, Any]] = mapped_column(server_default=text("'{}'::jsonb"))
    content_sha256: Mapped[str]
    epoch: Mapped[dict[str, Any] | None] = mapped_column(nullable=True)
    """``EpochRecord``: the participant's cache epoch this assembly belongs to."""
    boundary: Mapped[dict[str, Any] | None] = mapped_column(nullable=True)
    """The whole ``GenerationBoundary`` the assembly was made for (``None``: made before replay was stored)."""
    candidate_limits: Mapped[dict[str, Any] | None] = mapped_column(nullable=True)
    """The ``CandidateLimits`` the candidates were loaded with."""
    user_memory_seq: Mapped[int | None]
    """The account's highest user-memory ``seq`` when the candidates were loaded: user memories are
    account-wide, outside the conversation's ``snapshot_seq``."""
    user_memory_ids: Mapped[list[Any] | None] = mapped_column(nullable=True)
    """Ids of the user memories loaded (a memory forgotten since makes the assembly no longer replayable)."""
    previous_assembly_id: Mapped[str | None] = id_column(nullable=True)
    """The assembly whose epoch this one could continue (``None``: none). No foreign key: retention may
    delete it, and replay then says so."""
    messages: Mapped[list[Any]] = mapped_column(
        server_default=text("'[]'::jsonb"), deferred=True, deferred_raiseload=True
    )
    """The provider messages exactly as the model received them."""
    graph_query_ms: Mapped[float] = mapped_column(Double, server_default=text("0"))
    policy_ms: Mapped[float] = mapped_column(Double, server_default=text("0"))
    serialise_ms: Mapped[float] = mapped_column(Double, server_default=text("0"))
    created_at: Mapped[datetime] = created_at_column()
    retention: Mapped[str] = mapped_column(server_default=RetentionClass.KEEP.value)
    """Retention class (:mod:`policy.retention`), set when the row is written."""
    retention_days: Mapped[int] = mapped_column(server_default=text("0"))
    """Days after ``created_at`` the class applies."""
    retention_state: Mapped[str] = mapped_column(server_default=RetentionState.LIVE.value)
    """What retention has done to the row so far."""


class PolicyDecision(Base):
    """One decision of one assembly (``PolicyDecisionRecord``), in order."""

    __tablename__ = "policy_decisions"
    __table_args__ = (
        PrimaryKeyConstraint("context_assembly_id", "ordinal"),
        node_fk("context_assembly_id", "context_assemblies"),
        enum_check("outcome", DecisionOutcome),
        enum_check("omission", OmissionReason, nullable=True),
        Index("ix_policy_decisions_account_id_subject_ref", "account_id", "subject_ref"),
    )

    context_assembly_id: Mapped[str] = id_column()
    ordinal: Mapped[int]
    """Position in the assembly's decision list."""
    account_id: Mapped[str] = account_column()
    conversation_id: Mapped[str] = id_column()
    kind: Mapped[str]
    subject_ref: Mapped[str]
    outcome: Mapped[str]
    reason: Mapped[str]
    omission: Mapped[str | None]
    policy_version: Mapped[str]
