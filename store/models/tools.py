"""Tool state: tool calls with their attempt history, and captured artifacts.

A tool call is written when the model asks for it and updated as it runs.
Its artifact (the raw result) is captured exactly once; small payloads live
inline in ``inline_payload``, larger ones in the S3 artifact store under
``storage_key``. Either way ``sha256`` covers the payload bytes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import CheckConstraint, Index, LargeBinary, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column

from policy.enums import PrivacyClass, PromotionPolicy, RuntimeKind, ToolCallStatus, VisibilityScope
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

PINNED_TOOL_CALL_SQL = "status IN ('deferred', 'failed', 'pending', 'retrying') OR retry_critical"
"""Tool calls the owner must keep seeing: unresolved or retry-critical. Kept in
step with :data:`policy.enums.UNRESOLVED_STATUSES` (a test checks it)."""


class ToolCall(Base):
    """One tool invocation and its lifecycle."""

    __tablename__ = "tool_calls"
    __table_args__ = (
        UniqueConstraint("account_id", "call_id"),
        UniqueConstraint("account_id", "conversation_id", "id"),
        node_fk("branch_id", "branches"),
        node_fk("model_run_id", "model_runs"),
        node_fk("participant_id", "participants"),
        enum_check("status", ToolCallStatus),
        enum_check("visibility", VisibilityScope),
        enum_check("privacy", PrivacyClass),
        enum_check("runtime_kind", RuntimeKind),
        CheckConstraint("attempts >= 0", name="attempts"),
        Index("ix_tool_calls_node", "account_id", "conversation_id", "branch_id", "seq"),
        Index("ix_tool_calls_scope", "account_id", "conversation_id", "seq", postgresql_where=text(LIVE_SCOPE_SQL)),
        Index(
            "ix_tool_calls_pinned",
            "account_id",
            "conversation_id",
            "seq",
            postgresql_where=text(PINNED_TOOL_CALL_SQL),
        ),
        Index("ix_tool_calls_updated", "account_id", "conversation_id", "updated_seq"),
        Index("ix_tool_calls_account_id_model_run_id", "account_id", "model_run_id"),
    )

    id: Mapped[str] = id_column(primary_key=True)
    account_id: Mapped[str] = account_column()
    conversation_id: Mapped[str] = id_column()
    branch_id: Mapped[str] = id_column()
    seq: Mapped[int]
    model_run_id: Mapped[str | None] = id_column(nullable=True)
    participant_id: Mapped[str] = id_column()
    call_id: Mapped[str]
    """The provider's tool-call id; unique per account, the idempotency key."""
    name: Mapped[str]
    arguments: Mapped[dict[str, Any]] = mapped_column(server_default=text("'{}'::jsonb"))
    status: Mapped[str] = mapped_column(server_default=ToolCallStatus.PENDING.value)
    retry_critical: Mapped[bool] = mapped_column(server_default=text("false"))
    attempts: Mapped[int] = mapped_column(server_default=text("1"))
    last_error: Mapped[str | None]
    waiting_for: Mapped[str | None]
    visibility: Mapped[str] = mapped_column(server_default=VisibilityScope.BRANCH.value)
    shared_with: Mapped[list[str]] = id_array_column()
    privacy: Mapped[str] = mapped_column(server_default=PrivacyClass.USER.value)
    runtime_kind: Mapped[str] = mapped_column(server_default=RuntimeKind.CHAT.value)
    history: Mapped[list[Any]] = mapped_column(server_default=text("'[]'::jsonb"))
    """Every state the call went through: ``[{seq, attempt, status, error,
    waiting_for, retry_critical, at}]``; the last entry equals the columns."""
    updated_seq: Mapped[int]
    """``seq`` of the last change (the call's own ``seq`` until it is updated)."""
    created_at: Mapped[datetime] = created_at_column()
    updated_at: Mapped[datetime] = created_at_column()


class ToolArtifact(Base):
    """The raw result of one tool call, captured once."""

    __tablename__ = "tool_artifacts"
    __table_args__ = (
        enum_check("retention", RetentionClass),
        enum_check("retention_state", RetentionState),
        CheckConstraint("retention_days >= 0", name="retention_days"),
        UniqueConstraint("tool_call_id"),
        node_fk("tool_call_id", "tool_calls"),
        node_fk("branch_id", "branches"),
        node_fk("owner_participant_id", "participants"),
        node_fk("model_run_id", "model_runs"),
        enum_check("status", ToolCallStatus),
        enum_check("visibility", VisibilityScope),
        enum_check("privacy", PrivacyClass),
        enum_check("runtime_kind", RuntimeKind),
        enum_check("promotion", PromotionPolicy),
        enum_check("storage", ("inline", "object")),
        CheckConstraint(
            # Retention may remove the bytes (redact, hash-only) or move them (archive): only a live row must hold them.
            "retention_state <> 'live'"
            " OR (storage = 'inline' AND inline_payload IS NOT NULL)"
            " OR (storage = 'object' AND storage_key IS NOT NULL)",
            name="payload_location",
        ),
        CheckConstraint("char_length(sha256) = 64", name="sha256"),
        Index("ix_tool_artifacts_node", "account_id", "conversation_id", "branch_id", "seq"),
        Index("ix_tool_artifacts_scope", "account_id", "conversation_id", "seq", postgresql_where=text(LIVE_SCOPE_SQL)),
        Index("ix_tool_artifacts_account_id_sha256", "account_id", "sha256"),
        Index("ix_tool_artifacts_account_id_model_run_id", "account_id", "model_run_id"),
        Index("ix_tool_artifacts_retention_due", "created_at", postgresql_where=text(RETENTION_DUE_SQL)),
    )

    id: Mapped[str] = id_column(primary_key=True)
    account_id: Mapped[str] = account_column()
    conversation_id: Mapped[str] = id_column()
    tool_call_id: Mapped[str] = id_column()
    call_id: Mapped[str]
    tool_name: Mapped[str]
    status: Mapped[str]
    owner_participant_id: Mapped[str] = id_column()
    model_run_id: Mapped[str | None] = id_column(nullable=True)
    runtime_kind: Mapped[str] = mapped_column(server_default=RuntimeKind.CHAT.value)
    branch_id: Mapped[str] = id_column()
    seq: Mapped[int]
    visibility: Mapped[str]
    shared_with: Mapped[list[str]] = id_array_column()
    privacy: Mapped[str]
    content_type: Mapped[str]
    arguments: Mapped[dict[str, Any]] = mapped_column(
        server_default=text("'{}'::jsonb"), deferred=True, deferred_raiseload=True
    )
    """The raw arguments of the call, as executed."""
    sha256: Mapped[str]
    result_bytes: Mapped[int]
    arguments_bytes: Mapped[int]
    result_tokens: Mapped[int] = mapped_column(server_default=text("0"))
    storage: Mapped[str]
    storage_key: Mapped[str | None]
    inline_payload: Mapped[bytes | None] = mapped_column(LargeBinary, deferred=True, deferred_raiseload=True)
    """The payload itself when it is small; never loaded with the metadata."""
    error: Mapped[str | None]
    active_skills: Mapped[list[Any]] = mapped_column(server_default=text("'[]'::jsonb"))
    tool_profile: Mapped[str | None]
    provider: Mapped[str | None]
    model: Mapped[str | None]
    runtime_meta: Mapped[dict[str, Any]] = mapped_column(server_default=text("'{}'::jsonb"))
    tool_version: Mapped[str | None]
    captured_at: Mapped[datetime]
    promotion: Mapped[str] = mapped_column(server_default=PromotionPolicy.NONE.value)
    created_at: Mapped[datetime] = created_at_column()
    retention: Mapped[str] = mapped_column(server_default=RetentionClass.KEEP.value)
    """Retention class (:mod:`policy.retention`), set when the row is written."""
    retention_days: Mapped[int] = mapped_column(server_default=text("0"))
    """Days after ``created_at`` the class applies."""
    retention_state: Mapped[str] = mapped_column(server_default=RetentionState.LIVE.value)
    """What retention has done to the row so far."""
