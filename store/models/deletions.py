"""The record that an account was deleted: a tombstone holding no user data.

It is the one table without ``account_id``: the account it records is gone,
and the tombstone keeps only the sha256 of its id, so an auditor who knows the
id can prove it was deleted, and nobody can read the id back from the row.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint
from sqlalchemy.orm import Mapped, mapped_column

from store.models.base import Base, created_at_column


class AccountDeletion(Base):
    """One finished account deletion (``dossier delete-account``)."""

    __tablename__ = "account_deletions"
    __table_args__ = (CheckConstraint("char_length(account_sha256) = 64", name="account_sha256"),)

    account_sha256: Mapped[str] = mapped_column(primary_key=True)
    """Hex sha256 of the deleted account's id (never the id itself)."""
    rows_deleted: Mapped[int]
    """Rows the deletion removed, over every table."""
    objects_deleted: Mapped[int]
    """Objects it removed from the bucket (live and archived)."""
    finished_at: Mapped[datetime] = created_at_column()
    """When the last row and object were gone."""
