"""The closed vocabularies of the runtime graph.

Every enum is a ``StrEnum`` so values survive JSON, Postgres and Temporal
payloads unchanged. Orderings that the policy relies on (privacy strictness,
record-class priority) are defined here next to the values they order, so a
new value cannot be added without deciding where it ranks.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum


class PrivacyClass(StrEnum):
    """How sensitive a record is; drives provider routing.

    Ordered from least to most restrictive (see :data:`PRIVACY_RANK`). A record
    derived from several sources is as restrictive as the strictest source.
    """

    PUBLIC = "public"
    USER = "user"
    OAUTH = "oauth"
    GOOGLE_DERIVED = "google_derived"
    SECRET_ADJACENT = "secret_adjacent"


PRIVACY_RANK: dict[PrivacyClass, int] = {
    PrivacyClass.PUBLIC: 0,
    PrivacyClass.USER: 1,
    PrivacyClass.OAUTH: 2,
    PrivacyClass.GOOGLE_DERIVED: 3,
    PrivacyClass.SECRET_ADJACENT: 4,
}


STRICTEST_PRIVACY = PrivacyClass.SECRET_ADJACENT
"""What an unknown source, an unknown tool or an unresolvable reference counts as: fail closed."""


def strictest_privacy(classes: Iterable[PrivacyClass]) -> PrivacyClass:
    """The most restrictive of ``classes``; an empty list fails closed.

    The one join of the taint rule: a derived record (a memory, a promoted
    report, a tool call's arguments, the file it writes, a checkpoint) is at
    least as strict as every record it was built from.

    Args:
        classes: privacy classes of the sources of a derived record.

    Returns:
        The class with the highest rank, or ``SECRET_ADJACENT`` when no source
        class is known (an unknown source must not make a record more public).
    """
    ranked = [PrivacyClass(c) for c in classes]
    if not ranked:
        return STRICTEST_PRIVACY
    return max(ranked, key=PRIVACY_RANK.__getitem__)


def at_least(privacy: PrivacyClass, floor: PrivacyClass | None) -> PrivacyClass:
    """``privacy`` raised to ``floor`` (``None``: no floor): never looser than either."""
    return PrivacyClass(privacy) if floor is None else strictest_privacy((privacy, floor))


def is_looser(privacy: PrivacyClass, than: PrivacyClass) -> bool:
    """Whether ``privacy`` is strictly less restrictive than ``than``."""
    return PRIVACY_RANK[PrivacyClass(privacy)] < PRIVACY_RANK[PrivacyClass(than)]


class VisibilityScope(StrEnum):
    """Who may see a record, before privacy routing is considered."""

    PARTICIPANT_PRIVATE = "participant_private"
    """Only the owner participant (and ids in ``shared_with``)."""
    BRANCH = "branch"
    """Participants on the record's branch and on branches forked below it."""
    CONVERSATION = "conversation"
    """Every participant on every branch of the conversation."""
    AUDIT_ONLY = "audit_only"
    """Kept for audit and replay; never placed in a model context."""


class FreshnessClass(StrEnum):
    """How quickly an observation goes out of date."""

    VOLATILE = "volatile"
    """Minutes: inbox contents, prices, calendar availability."""
    SESSION = "session"
    """Valid for the working session that observed it."""
    BOUNDED = "bounded"
    """Valid until an explicit ``stale_after``."""
    DURABLE = "durable"
    """Days or more: a document's content, a finished report."""
    PERMANENT = "permanent"
    """Never goes stale: a content hash, a generated file handle."""


class ToolCallStatus(StrEnum):
    """Lifecycle of one tool call."""

    PENDING = "pending"
    DEFERRED = "deferred"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    RETRYING = "retrying"


UNRESOLVED_STATUSES: frozenset[ToolCallStatus] = frozenset(
    {ToolCallStatus.PENDING, ToolCallStatus.DEFERRED, ToolCallStatus.FAILED, ToolCallStatus.RETRYING}
)
"""Tool states the owner must keep seeing until they are resolved."""


class RuntimeKind(StrEnum):
    """Which runtime mode produced a model run."""

    CHAT = "chat"
    MULTI_MODEL = "multi_model"
    DISCUSSION = "discussion"
    SUBAGENT_CHILD = "subagent_child"
    PARENT_RESUME = "parent_resume"
    SCHEDULED_JOB = "scheduled_job"
    BRANCH_SEND = "branch_send"


class MessageRole(StrEnum):
    """OpenAI-style chat roles."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class RecordClass(StrEnum):
    """What a candidate record is *for*; decides its priority under budget."""

    RECOVERY = "recovery"
    """Unresolved, deferred, failed or retry-critical tool state."""
    POLICY = "policy"
    """Directives that constrain the turn (moderator instructions)."""
    PLANNING = "planning"
    """Continuation checkpoints and active skill state."""
    CONVERSATIONAL = "conversational"
    """User-visible transcript messages."""
    EPISTEMIC = "epistemic"
    """What the agent knows: tool memories and user memories."""
    PROVENANCE = "provenance"
    """Raw evidence rehydrated from artifacts."""
    OPERATIONAL = "operational"
    """Bookkeeping such as successful tool-call receipts."""


CLASS_PRIORITY: dict[RecordClass, int] = {
    RecordClass.RECOVERY: 0,
    RecordClass.POLICY: 1,
    RecordClass.PLANNING: 2,
    RecordClass.CONVERSATIONAL: 3,
    RecordClass.EPISTEMIC: 4,
    RecordClass.PROVENANCE: 5,
    RecordClass.OPERATIONAL: 6,
}
"""Lower is kept first when the token budget runs out."""


class PromotionPolicy(StrEnum):
    """When a record produced in a child run may reach its parent."""

    NONE = "none"
    """Not a child record: visible according to its scope."""
    ON_COMPLETION = "on_completion"
    """Private to the child run until a promotion step copies it up."""
    NEVER = "never"
    """Workspace scratch: never promoted, parent sees none of it."""


class ResolutionStatus(StrEnum):
    """Whether a memory's provenance still resolves to its artifacts."""

    RESOLVED = "resolved"
    MISSING_SOURCE = "missing_source"
    HASH_MISMATCH = "hash_mismatch"
    REPAIRED = "repaired"


class DecisionOutcome(StrEnum):
    """What a policy decision did to its subject."""

    INCLUDED = "included"
    OMITTED = "omitted"
    MARKED_STALE = "marked_stale"
    REHYDRATED = "rehydrated"
    DENIED = "denied"
    PROTECTED = "protected"
    NOTED = "noted"


class OmissionReason(StrEnum):
    """Why a candidate did not reach the model, counted per assembly."""

    OUTSIDE_LINEAGE = "outside_lineage"
    """On a sibling branch or after the fork point."""
    NOT_VISIBLE = "not_visible"
    """Private to another participant."""
    AUDIT_ONLY = "audit_only"
    NOT_PROMOTED = "not_promoted"
    """A child run's record that no promotion step released."""
    PRIVACY_ROUTE = "privacy_route"
    """The provider route may not receive this privacy class."""
    STALE = "stale"
    """Out of date; replaced by a stale marker or dropped."""
    SUPERSEDED = "superseded"
    RESOLVED_ELSEWHERE = "resolved_elsewhere"
    """Covered by a compact record (e.g. a raw tool message replaced by memory)."""
    OUTSIDE_WINDOW = "outside_window"
    """An older transcript message beyond the conversational window."""
    BUDGET = "budget"
    RAW_NOT_REQUESTED = "raw_not_requested"
    RAW_BYTE_BUDGET = "raw_byte_budget"
    RAW_PRIVACY = "raw_privacy"
    RAW_MISSING = "raw_missing"
    """Raw bytes planned for the model (evidence or a first read) whose stored object is missing."""
    RAW_HASH_MISMATCH = "raw_hash_mismatch"
    """Raw bytes planned for the model whose stored object failed its sha256 check (tampered or corrupt)."""
