"""Stored objects: the graph's record of every object a tool call puts in the bucket.

A row is written, and committed, *before* the put (:func:`store.objects.record_object`),
so no object under an account's prefix is ever unknown to the graph: a put whose
call then fails, is cancelled or never settles leaves a ``pending`` row, not an
orphan. The capture of the call's succeeded result marks the rows it references
``claimed`` in the same transaction as the artifact row. The retention sweep
(:func:`store.objects.sweep_unclaimed_batch`) removes pending rows past a grace
period, and their object when no other row still refers to its key.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sqlalchemy import CheckConstraint, Index, UniqueConstraint, text
from sqlalchemy.orm import Mapped

from policy.enums import PrivacyClass
from store.models.base import Base, account_column, created_at_column, enum_check, id_column, node_fk


class ObjectState(StrEnum):
    """Whether a settled result refers to a stored object yet."""

    PENDING = "pending"
    """Recorded before the put; no succeeded result refers to it (yet)."""
    CLAIMED = "claimed"
    """The call's captured, succeeded result refers to it (a file handle, or the payload itself)."""


class StoredObject(Base):
    """One object a tool call put (or was about to put) under its account's prefix."""

    __tablename__ = "stored_objects"
    __table_args__ = (
        # A retried attempt writing the same bytes finds the first attempt's row (and refreshes written_at).
        UniqueConstraint("account_id", "tool_call_id", "key"),
        node_fk("tool_call_id", "tool_calls"),
        enum_check("state", ObjectState),
        enum_check("privacy", PrivacyClass),
        CheckConstraint("char_length(sha256) = 64", name="sha256"),
        CheckConstraint("size >= 0", name="size"),
        # Reference counting: every row naming a key (content addressing shares a key across calls).
        Index("ix_stored_objects_account_id_key", "account_id", "key"),
        # The sweep scans the pending rows only.
        Index("ix_stored_objects_pending", "written_at", postgresql_where=text("state = 'pending'")),
    )

    id: Mapped[str] = id_column(primary_key=True)
    account_id: Mapped[str] = account_column()
    conversation_id: Mapped[str] = id_column()
    tool_call_id: Mapped[str] = id_column()
    """The call whose attempt wrote it."""
    key: Mapped[str]
    """The object key (``accounts/<account>/sha256/<hex>``)."""
    sha256: Mapped[str]
    """Hex sha256 of the bytes (the key's last segment)."""
    size: Mapped[int]
    """Size in bytes."""
    content_type: Mapped[str]
    """MIME type stored with the object."""
    privacy: Mapped[str]
    """The object's privacy class (the call's: what its metadata says)."""
    state: Mapped[str]
    """``pending`` or ``claimed`` (:class:`ObjectState`)."""
    created_at: Mapped[datetime] = created_at_column()
    """When the first attempt recorded it."""
    written_at: Mapped[datetime] = created_at_column()
    """When the latest attempt recorded it, just before its put: the sweep's grace period runs from here."""
