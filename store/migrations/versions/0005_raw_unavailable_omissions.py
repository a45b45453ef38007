"""Two omission reasons: planned raw bytes that were missing or failed their sha256 check.

A first read or requested evidence whose stored object cannot be read (gone,
or its bytes do not hash to what was captured) is no longer recorded as
rehydrated: its PolicyDecision carries ``raw_missing`` or
``raw_hash_mismatch``. The CHECK constraint on ``policy_decisions.omission``
gains both values.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BEFORE = ("audit_only", "budget", "not_promoted", "not_visible", "outside_lineage", "outside_window",
           "privacy_route", "raw_byte_budget", "raw_not_requested", "raw_privacy", "resolved_elsewhere", "stale",
           "superseded")
_AFTER = tuple(sorted((*_BEFORE, "raw_hash_mismatch", "raw_missing")))


def _check(values: Sequence[str]) -> str:
    return "omission IS NULL OR omission IN (" + ", ".join(f"'{v}'" for v in values) + ")"


def upgrade() -> None:
    op.drop_constraint(op.f("ck_policy_decisions_omission"), "policy_decisions", type_="check")
    op.create_check_constraint(op.f("ck_policy_decisions_omission"), "policy_decisions", _check(_AFTER))


def downgrade() -> None:
    # The older schema has no value for these: the reason text still says what happened.
    op.execute("UPDATE policy_decisions SET omission = NULL WHERE omission IN ('raw_hash_mismatch', 'raw_missing')")
    op.drop_constraint(op.f("ck_policy_decisions_omission"), "policy_decisions", type_="check")
    op.create_check_constraint(op.f("ck_policy_decisions_omission"), "policy_decisions", _check(_BEFORE))
