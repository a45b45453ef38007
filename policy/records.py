"""Typed records: what the assembler sees of the runtime graph.

These are plain, frozen pydantic models. ``store/`` converts its rows into
them inside a session; nothing here knows about Postgres or S3. Every graph
node carries ``seq``, a per-conversation sequence number assigned when the
node is written: it orders records without wall clocks and identifies a graph
snapshot (``CandidateSet.snapshot_seq``).

Ids are opaque strings (UUIDs in the store). The assembler never invents one.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer

from policy.enums import (
    DecisionOutcome,
    FreshnessClass,
    MessageRole,
    OmissionReason,
    PrivacyClass,
    PromotionPolicy,
    RecordClass,
    ResolutionStatus,
    RuntimeKind,
    ToolCallStatus,
    VisibilityScope,
)


class Record(BaseModel):
    """Base for every policy record: immutable, strict about unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")


# --------------------------------------------------------------------------- graph shape


class LineageStep(Record):
    """One branch on the path from the root branch to the active branch."""

    branch_id: str
    """The branch."""
    until_seq: int | None = None
    """Last ``seq`` of this branch that belongs to the lineage (its child's fork
    point); ``None`` for the active branch itself."""


class Lineage(Record):
    """The active branch and its ancestors, root first."""

    steps: tuple[LineageStep, ...]
    """Root branch first, active branch last."""

    @property
    def active_branch_id(self) -> str:
        """The branch the generation runs on."""
        return self.steps[-1].branch_id

    def contains(self, branch_id: str, seq: int) -> bool:
        """Whether a node written on ``branch_id`` at ``seq`` is in this lineage.

        Args:
            branch_id: the branch the node was written on.
            seq: the node's conversation sequence number.

        Returns:
            True when the branch is an ancestor (or the active branch) and the
            node was written no later than the fork point below it.
        """
        for step in self.steps:
            if step.branch_id == branch_id:
                return step.until_seq is None or seq <= step.until_seq
        return False

    def depth(self, branch_id: str) -> int:
        """Distance of ``branch_id`` from the active branch (0 = active)."""
        for index, step in enumerate(reversed(self.steps)):
            if step.branch_id == branch_id:
                return index
        return len(self.steps)


class ParticipantRecord(Record):
    """A model or persona taking part in a conversation."""

    id: str
    name: str
    """Display name and speaker label, e.g. ``"Analyst"``."""
    role: Literal["assistant", "moderator", "subagent", "user"] = "assistant"
    provider: str | None = None
    model: str | None = None
    system_prompt: str = ""
    parent_participant_id: str | None = None
    """For a subagent: the participant that spawned it."""


# --------------------------------------------------------------------------- transcript


class ToolCallRequest(Record):
    """A tool call as written in an assistant message (for transcript replay)."""

    call_id: str
    name: str
    arguments: dict[str, Any]


class MessageRecord(Record):
    """A user-visible transcript node."""

    id: str
    branch_id: str
    seq: int
    role: MessageRole
    content: str
    author_participant_id: str | None = None
    """The participant that wrote it; ``None`` for the human user."""
    speaker_label: str | None = None
    """Label shown in multi-party transcripts (``"Moderator"``, ``"Critic"``)."""
    is_directive: bool = False
    """A moderator instruction that constrains the next turns."""
    tool_calls: tuple[ToolCallRequest, ...] = ()
    """Tool calls the assistant made in this message (legacy replay shows them)."""
    model_run_id: str | None = None
    visibility: VisibilityScope = VisibilityScope.BRANCH
    """Transcript messages belong to their branch; sibling branches never see them."""
    shared_with: tuple[str, ...] = ()
    privacy: PrivacyClass = PrivacyClass.USER
    """A model's message is as strict as what its run was shown: it may repeat any of it."""


# --------------------------------------------------------------------------- tool state


class ToolCallRecord(Record):
    """One tool invocation and its lifecycle."""

    id: str
    call_id: str
    """The provider's tool-call id; captures are idempotent on it."""
    name: str
    arguments: dict[str, Any]
    status: ToolCallStatus
    branch_id: str
    seq: int
    participant_id: str
    model_run_id: str | None = None
    runtime_kind: RuntimeKind = RuntimeKind.CHAT
    retry_critical: bool = False
    """Its failure must survive into later contexts verbatim."""
    attempts: int = 1
    last_error: str | None = None
    waiting_for: str | None = None
    """For a deferred call: what it waits for (``"user to pick a document"``)."""
    visibility: VisibilityScope = VisibilityScope.BRANCH
    shared_with: tuple[str, ...] = ()
    privacy: PrivacyClass = PrivacyClass.USER


class ArtifactRecord(Record):
    """Metadata of a captured raw tool payload (the bytes live in the store)."""

    id: str
    tool_call_id: str
    call_id: str
    tool_name: str
    status: ToolCallStatus
    branch_id: str
    seq: int
    owner_participant_id: str
    model_run_id: str | None = None
    runtime_kind: RuntimeKind = RuntimeKind.CHAT
    visibility: VisibilityScope
    shared_with: tuple[str, ...] = ()
    privacy: PrivacyClass
    content_type: str
    sha256: str
    result_bytes: int
    arguments_bytes: int
    storage: Literal["inline", "object"]
    storage_key: str | None = None
    result_tokens: int = 0
    """Tokens of the raw result as transcript replay would show it (counted at
    capture, so replay cost is known without loading the payload)."""
    tool_version: str | None = None
    captured_at: datetime
    promotion: PromotionPolicy = PromotionPolicy.NONE


class Locator(Record):
    """Where, inside an artifact, a fact came from.

    ``kind`` picks the addressing scheme: ``rows`` (CSV data rows, 1-based,
    inclusive, header excluded), ``lines`` (text lines, 1-based, inclusive),
    ``json_pointer`` (RFC 6901) or ``whole``.
    """

    artifact_id: str
    kind: Literal["rows", "lines", "json_pointer", "whole"] = "whole"
    start: int | None = None
    end: int | None = None
    pointer: str | None = None


class ToolMemoryRecord(Record):
    """Compact, model-facing knowledge derived from artifacts."""

    id: str
    branch_id: str
    seq: int
    owner_participant_id: str
    model_run_id: str | None = None
    runtime_kind: RuntimeKind = RuntimeKind.CHAT
    source_artifact_ids: tuple[str, ...]
    source_tool: str
    subject_key: str
    """What the memory is about, canonically (tool + identifying arguments); a
    newer memory with the same key supersedes an older one."""
    resources: tuple[str, ...] = ()
    """The resources its call read (``r:``) or wrote (``w:``), as digests (:mod:`policy.resources`): a write
    supersedes earlier results of what it wrote, whatever tool read them."""
    title: str
    """The subject in words, without its values; what a stale marker shows."""
    summary: str
    """One or two lines a model can read; carries the facts that matter."""
    payload: dict[str, Any] = Field(default_factory=dict)
    """Structured facts (counts, ids, totals) the summary was made from."""
    confidence: float = 1.0
    confidence_source: str = "derived"
    rationale: str = ""
    limitations: str = ""
    visibility: VisibilityScope
    shared_with: tuple[str, ...] = ()
    privacy: PrivacyClass
    freshness: FreshnessClass
    observed_at: datetime
    stale_after: datetime | None = None
    revalidate_with: tuple[str, ...] = ()
    locators: tuple[Locator, ...] = ()
    resolution: ResolutionStatus = ResolutionStatus.RESOLVED
    repair_attempts: int = 0
    conflicts_with: tuple[str, ...] = ()
    supersedes: tuple[str, ...] = ()
    superseded_by: str | None = None
    promotion: PromotionPolicy = PromotionPolicy.NONE
    promoted_from: tuple[str, ...] = ()
    """Child-run memory ids this record was promoted from."""


class UserMemoryRecord(Record):
    """Personalisation about the user; never derived from a tool result alone."""

    id: str
    seq: int
    text: str
    privacy: PrivacyClass = PrivacyClass.USER
    participant_id: str | None = None
    """Restricts the memory to one participant; ``None`` for all."""


class SkillStateRecord(Record):
    """The state one active skill keeps across turns."""

    id: str
    branch_id: str
    seq: int
    participant_id: str
    skill: str
    state: dict[str, Any]
    active: bool = True
    visibility: VisibilityScope = VisibilityScope.PARTICIPANT_PRIVATE
    privacy: PrivacyClass = PrivacyClass.USER


class CheckpointRecord(Record):
    """A deterministic continuation point (tool loop, subagent batch, resume)."""

    id: str
    branch_id: str
    seq: int
    participant_id: str
    kind: Literal["tool_loop", "subagent_batch", "parent_resume", "deferred_wait"]
    state: dict[str, Any]
    """Small structured state: steps done, next step, child outcomes."""
    references: tuple[str, ...] = ()
    """Graph ids the continuation relies on (promoted memories, artifacts)."""
    model_run_id: str | None = None
    visibility: VisibilityScope = VisibilityScope.PARTICIPANT_PRIVATE
    privacy: PrivacyClass = PrivacyClass.USER


# --------------------------------------------------------------------------- inputs


class EvidenceRequest(Record):
    """A request for exact raw evidence from one artifact (or a slice of it)."""

    artifact_id: str
    locator: Locator | None = None
    reason: str = ""


class RouteLimit(Record):
    """An agent's own limit on what its provider route may receive: it narrows the route, never widens it."""

    allowed: frozenset[PrivacyClass]
    """Classes whose compact records the agent's model may be sent."""
    raw_allowed: frozenset[PrivacyClass]
    """Classes whose raw bytes the agent's model may be sent (only those also in ``allowed`` count)."""

    @field_serializer("allowed", "raw_allowed")
    def _sorted(self, classes: frozenset[PrivacyClass]) -> list[str]:
        return sorted(c.value for c in classes)


class SkillCatalogEntry(Record):
    """One skill a participant may load: what the compact skill catalog shows of it."""

    name: str
    """The skill's name (its folder's), the argument ``load_skill`` takes."""
    description: str
    """One line saying when to load it."""
    instructions: str | None = None
    """Set once the participant has loaded it: the skill's instructions, read from the user's skill file
    (never from a tool result), shown in full after the list so they outlive the ``load_skill`` result."""


class GenerationBoundary(Record):
    """Everything that identifies one model call."""

    account_id: str
    conversation_id: str
    branch_id: str
    participant_id: str
    runtime_kind: RuntimeKind
    provider_route: str
    """Key into ``ContextPolicy.routes``; an unknown route fails closed."""
    route_limit: RouteLimit | None = None
    """The agent's ``route`` (from its definition): the route in force is the provider route's classes
    intersected with these. ``None``: the provider route as the policy defines it."""
    token_budget: int | None = None
    """Overrides the policy's default prompt budget when set."""
    now: datetime
    """The generation's logical time (a workflow time, never a wall clock)."""
    model_run_id: str | None = None
    evidence_requests: tuple[EvidenceRequest, ...] = ()
    skill_catalog: tuple[SkillCatalogEntry, ...] = ()
    """The skills the participant may load (from its agent's ``skills``, read from the user's skill files):
    rendered as their own system message (:func:`policy.skills.catalog_message`). Empty: no catalog."""


class CandidateSet(Record):
    """The bounded slice of the graph one assembly may draw from."""

    snapshot_seq: int
    """Highest ``seq`` in the conversation when the candidates were loaded."""
    lineage: Lineage
    participants: tuple[ParticipantRecord, ...]
    messages: tuple[MessageRecord, ...] = ()
    tool_calls: tuple[ToolCallRecord, ...] = ()
    artifacts: tuple[ArtifactRecord, ...] = ()
    tool_memories: tuple[ToolMemoryRecord, ...] = ()
    user_memories: tuple[UserMemoryRecord, ...] = ()
    skill_states: tuple[SkillStateRecord, ...] = ()
    checkpoints: tuple[CheckpointRecord, ...] = ()
    unloaded_open_calls: int = Field(default=0, ge=0)
    """Open (pending, deferred, retrying) calls on the lineage past the candidate limit: not loaded, but
    counted, so the assembly records that they exist instead of losing them silently."""
    unloaded_failed_calls: int = Field(default=0, ge=0)
    """Failed calls on the lineage older than the newest the candidate limit loads."""


# --------------------------------------------------------------------------- outputs


class ChatMessage(Record):
    """An OpenAI-style chat message."""

    role: MessageRole
    content: str | None = None
    name: str | None = None
    tool_calls: tuple[ToolCallRequest, ...] = ()
    tool_call_id: str | None = None

    def to_openai(self) -> dict[str, Any]:
        """The message as the OpenAI chat-completions API expects it."""
        out: dict[str, Any] = {"role": self.role.value, "content": self.content}
        if self.name:
            out["name"] = self.name
        if self.tool_calls:
            out["tool_calls"] = [
                {
                    "id": call.call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": canonical_json(call.arguments)},
                }
                for call in self.tool_calls
            ]
        if self.tool_call_id:
            out["tool_call_id"] = self.tool_call_id
        return out

    @classmethod
    def from_openai(cls, message: dict[str, Any]) -> ChatMessage:
        """The inverse of :meth:`to_openai` (a persisted assembly read back for the model call).

        Raises:
            ValueError: a malformed message (unknown role, tool-call arguments that are not JSON).
        """
        calls = tuple(
            ToolCallRequest(
                call_id=call["id"],
                name=call["function"]["name"],
                arguments=json.loads(call["function"].get("arguments") or "{}"),
            )
            for call in message.get("tool_calls") or ()
        )
        return cls(
            role=MessageRole(message["role"]),
            content=message.get("content"),
            name=message.get("name"),
            tool_calls=calls,
            tool_call_id=message.get("tool_call_id"),
        )


class PolicyDecisionRecord(Record):
    """One decision the policy took about one subject."""

    kind: str
    """The rule that decided (``visibility``, ``privacy``, ``freshness`` ...)."""
    subject_ref: str
    """``<type>:<id>`` of the record decided about."""
    outcome: DecisionOutcome
    reason: str
    omission: OmissionReason | None = None
    policy_version: str


class RehydrationItem(Record):
    """Raw evidence the assembler decided to place in the context."""

    artifact_id: str
    locator: Locator | None = None
    max_bytes: int
    tool_call_id: str | None = None
    """Set for a result shown natively: the tool call whose tool message carries the raw bytes."""


class EpochRecord(Record):
    """Where one assembly stands in its participant's cache epoch.

    An epoch is a stable prefix (the governed context assembled when the epoch
    started) followed by the events appended since, natively and in order.
    Consecutive calls in one epoch share the prefix byte for byte, so a
    provider's prompt cache reads it instead of billing it again.
    """

    epoch_id: str
    """Stable for every assembly of the epoch."""
    started: bool
    """This assembly started the epoch (its prefix was assembled afresh)."""
    reason: str
    """Why the epoch started here, or ``continued``."""
    boundary_seq: int
    """Events are the records after this ``seq``; the prefix is assembled from the rest."""
    started_snapshot_seq: int
    """The graph snapshot the epoch started at: appended results newer than it never reshape the prefix."""
    prefix_budget: int
    """Tokens the prefix was selected within (the budget its first events left); kept for the whole epoch."""
    prefix_messages: int
    """How many leading messages form the prefix."""
    prefix_digest: str
    """sha256 over what the prefix was assembled from: equal digests, equal prefixes."""
    prefix_items: tuple[str, ...] = ()
    """``<ref>#<hash of its rendering>`` of each prefix part, in order (what a restart is diffed against)."""
    appended_tokens: int = 0
    """Tokens of the appended events."""
    pending_calls: tuple[str, ...] = ()
    """Tool calls appended with a placeholder result (their real result restarts the epoch)."""
    started_at: datetime | None = None
    """The logical time the epoch started (``epoch_staleness="note"`` keeps the prefix's freshness as of then)."""
    stale_notes: tuple[tuple[str, int], ...] = ()
    """``(memory id, after seq)`` of prefix memories noted stale during the epoch, in the order noted."""
    cache_breakpoints: tuple[int, ...] = ()
    """Message indexes after which a provider should cache (system prompt, prefix end, last message)."""
    cache_ttl_seconds: int | None = None
    """The cache lifetime this call's breakpoints ask for (``ContextPolicy.cache_long_ttl_seconds``);
    ``None``: the provider's default."""


class PreviousAssembly(Record):
    """The participant's previous assembly on the branch: what an epoch continues from."""

    snapshot_seq: int
    policy_version: str
    branch_id: str
    provider_route: str
    runtime_kind: RuntimeKind
    epoch: EpochRecord
    generation_at: datetime | None = None
    """The previous call's logical time (its boundary's ``now``); ``None``: unknown, and the provider's cache is
    never judged cold (``ContextPolicy.cache_ttl_seconds``)."""

    @classmethod
    def of(cls, record: ContextAssemblyRecord, boundary: GenerationBoundary) -> PreviousAssembly:
        """What the next call continues from, given this call's assembly record and boundary (its time included).

        Raises:
            ValueError: the record has no epoch (it predates epochs).
        """
        if record.epoch is None:
            raise ValueError("an assembly without an epoch cannot be continued")
        return cls(snapshot_seq=record.snapshot_seq, policy_version=record.policy_version,
                   branch_id=boundary.branch_id, provider_route=boundary.provider_route,
                   runtime_kind=boundary.runtime_kind, epoch=record.epoch, generation_at=boundary.now)


class ContextAssemblyRecord(Record):
    """The versioned record of what one model call saw and what it did not."""

    policy_version: str
    assembler_version: str
    snapshot_seq: int
    legacy_message_count: int
    assembled_message_count: int
    legacy_tokens: int
    assembled_tokens: int
    token_budget: int
    selected_refs: tuple[str, ...]
    rehydrated_refs: tuple[str, ...]
    omitted_counts: dict[str, int]
    content_sha256: str
    """Hash of the canonical provider messages: equal hashes, equal contexts."""
    epoch: EpochRecord | None = None
    """The cache epoch this assembly belongs to (``None`` for assemblies made before epochs)."""


def canonical_json(value: Any) -> str:
    """Deterministic, compact JSON: sorted keys, no spaces, UTF-8 kept."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


RESULT_SEPARATOR = " → "
"""``<title> → <summary>``: a result's summary follows its title (:func:`policy.derive.derive_memory`)."""
FAILED_SEPARATOR = " FAILED: "
"""``<title> FAILED: <last error line>``: a failed call's memory (what retention rewrites, too)."""

KEY_MAX_BYTES = 512
"""An indexed key (a memory's subject, a decision's subject) holds at most this many UTF-8 bytes; a btree
row holds 2,704, and a file written whole or a long shell command in the arguments is several KB."""
KEY_DIGEST_MARK = "…#"


def bounded_key(text: str, limit: int = KEY_MAX_BYTES) -> str:
    """``text`` if it fits in ``limit`` bytes, else its readable head, :data:`KEY_DIGEST_MARK` and a digest
    of the whole: equal texts still give equal keys and different ones different keys."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    digest = hashlib.blake2b(data, digest_size=16).hexdigest()
    room = limit - len((KEY_DIGEST_MARK + digest).encode())
    head = data[:room].decode("utf-8", "ignore")  # a character cut at the byte limit is dropped whole
    return f"{head}{KEY_DIGEST_MARK}{digest}"


__all__ = [
    "FAILED_SEPARATOR",
    "RESULT_SEPARATOR",
    "KEY_MAX_BYTES",
    "ArtifactRecord",
    "CandidateSet",
    "ChatMessage",
    "CheckpointRecord",
    "ContextAssemblyRecord",
    "DecisionOutcome",
    "EpochRecord",
    "EvidenceRequest",
    "GenerationBoundary",
    "Lineage",
    "LineageStep",
    "Locator",
    "MessageRecord",
    "ParticipantRecord",
    "PolicyDecisionRecord",
    "PreviousAssembly",
    "RecordClass",
    "RehydrationItem",
    "SkillStateRecord",
    "ToolCallRecord",
    "ToolCallRequest",
    "ToolMemoryRecord",
    "UserMemoryRecord",
    "bounded_key",
    "canonical_json",
]
