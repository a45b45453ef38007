"""The admission rules every candidate passes before it competes for budget.

Each rule is a small pure function that returns ``None`` (admit) or a
:class:`Denial` naming the :class:`OmissionReason`. The order is the order of
the design: lineage, visibility, promotion, privacy. Freshness and
supersession apply to memories only and live here too.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from policy.enums import (
    FreshnessClass,
    OmissionReason,
    PrivacyClass,
    PromotionPolicy,
    VisibilityScope,
)
from policy.policy import ContextPolicy, ProviderRoute
from policy.records import Lineage, ToolMemoryRecord


class Gated(Protocol):
    """What the gates read from any graph record.

    ``shared_with`` is read when present: checkpoints and skill states have none.
    """

    branch_id: str
    seq: int
    visibility: VisibilityScope


@dataclass(frozen=True)
class Denial:
    """Why a record was not admitted."""

    reason: OmissionReason
    detail: str


@dataclass(frozen=True)
class Viewer:
    """Who is asking, and through which provider route."""

    participant_id: str
    lineage: Lineage
    route: ProviderRoute


def owner_of(record: object) -> str | None:
    """The participant that owns a record, whatever the record type calls it."""
    for name in ("owner_participant_id", "participant_id", "author_participant_id"):
        owner = getattr(record, name, None)
        if owner is not None:
            return owner
    return None


def check_scope(record: Gated, viewer: Viewer) -> Denial | None:
    """Lineage and visibility: may ``viewer`` see ``record`` at all?

    Records on the active lineage pass; conversation-scoped records and
    records explicitly shared with the viewer pass from anywhere in the
    conversation. Private records pass only for their owner.
    """
    if record.visibility is VisibilityScope.AUDIT_ONLY:
        return Denial(OmissionReason.AUDIT_ONLY, "audit-only record")
    shared = viewer.participant_id in getattr(record, "shared_with", ())
    in_lineage = viewer.lineage.contains(record.branch_id, record.seq)
    if not (in_lineage or shared or record.visibility is VisibilityScope.CONVERSATION):
        return Denial(OmissionReason.OUTSIDE_LINEAGE, f"branch {record.branch_id} seq {record.seq} not in lineage")
    if record.visibility is VisibilityScope.PARTICIPANT_PRIVATE:
        owner = owner_of(record)
        if owner != viewer.participant_id and not shared:
            return Denial(OmissionReason.NOT_VISIBLE, f"private to participant {owner}")
    return None


def check_promotion(record: object, viewer: Viewer) -> Denial | None:
    """A child run's record reaches others only through a promoted copy."""
    promotion = getattr(record, "promotion", PromotionPolicy.NONE)
    if promotion is PromotionPolicy.NONE:
        return None
    owner = owner_of(record)
    if owner == viewer.participant_id or viewer.participant_id in getattr(record, "shared_with", ()):
        return None
    return Denial(OmissionReason.NOT_PROMOTED, f"child-run record ({promotion.value}) not promoted")


def check_privacy(privacy: PrivacyClass, viewer: Viewer) -> Denial | None:
    """Fail closed: only classes the route explicitly allows pass."""
    if privacy in viewer.route.allowed:
        return None
    return Denial(OmissionReason.PRIVACY_ROUTE, f"{privacy.value} not allowed on route {viewer.route.name}")


def admit(record: Gated, privacy: PrivacyClass, viewer: Viewer) -> Denial | None:
    """Scope, then promotion, then privacy; the first denial wins."""
    return check_scope(record, viewer) or check_promotion(record, viewer) or check_privacy(privacy, viewer)


def stale_at(memory: ToolMemoryRecord, policy: ContextPolicy) -> datetime | None:
    """When ``memory`` stops being current; ``None`` for never."""
    if memory.stale_after is not None:
        return memory.stale_after
    if memory.freshness is FreshnessClass.PERMANENT:
        return None
    ttl = policy.freshness_ttl.get(memory.freshness)
    return None if ttl is None else memory.observed_at + ttl


def is_stale(memory: ToolMemoryRecord, policy: ContextPolicy, now: datetime) -> bool:
    """Whether ``memory`` is out of date at the generation's logical time."""
    limit = stale_at(memory, policy)
    return limit is not None and now >= limit
