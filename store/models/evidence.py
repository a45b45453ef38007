"""Evidence requests: what a model recalled of the raw evidence behind an id, and what the policy decided."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column

from policy.enums import DecisionOutcome
from store.models.base import Base, account_column, created_at_column, enum_check, id_column, node_fk


class EvidenceRequest(Base):
    """One ``recall`` call: the id and locator asked for, the PolicyDecision, and the bytes served."""

    __tablename__ = "evidence_requests"
    __table_args__ = (
        # One request per tool call: a retried recall attempt finds the first attempt's row.
        UniqueConstraint("account_id", "tool_call_id"),
        node_fk("tool_call_id", "tool_calls"),
        node_fk("branch_id", "branches"),
        node_fk("participant_id", "participants"),
        node_fk("model_run_id", "model_runs"),
        enum_check("outcome", DecisionOutcome),
        Index("ix_evidence_requests_account_id_branch_id", "account_id", "branch_id"),
        Index("ix_evidence_requests_account_id_model_run_id", "account_id", "model_run_id"),
    )

    id: Mapped[str] = id_column(primary_key=True)
    account_id: Mapped[str] = account_column()
    conversation_id: Mapped[str] = id_column()
    branch_id: Mapped[str] = id_column()
    participant_id: Mapped[str] = id_column()
    tool_call_id: Mapped[str] = id_column()
    """The ``recall`` call; its captured result is the answer the model read."""
    model_run_id: Mapped[str | None] = id_column(nullable=True)
    """The run that asked: the recall byte budget is per run."""
    requested_ref: Mapped[str]
    """The id as the model wrote it (``m:3f2a91c0``, ``a:...`` or a full id)."""
    artifact_id: Mapped[str | None] = id_column(nullable=True)
    """The artifact it resolved to; ``None`` when it resolved to nothing the viewer may see."""
    locator: Mapped[dict[str, Any] | None] = mapped_column(nullable=True)
    """``Locator.model_dump()``; ``None`` for the whole artifact."""
    outcome: Mapped[str]
    """``rehydrated`` (served) or ``denied``."""
    decision: Mapped[dict[str, Any]]
    """``PolicyDecisionRecord.model_dump(mode="json")``."""
    bytes_served: Mapped[int] = mapped_column(server_default=text("0"))
    created_at: Mapped[datetime] = created_at_column()
