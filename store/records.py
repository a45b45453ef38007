"""Records the store returns for things the policy core does not model.

Graph nodes the assembler reads come back as :mod:`policy.records` types;
these cover the rest (conversations, branches, model runs, saved assemblies).
Like the policy records they are frozen pydantic models: ORM objects never
leave ``store/``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from policy.enums import RuntimeKind
from policy.records import ContextAssemblyRecord, GenerationBoundary, PolicyDecisionRecord

ModelRunStatus = Literal["running", "succeeded", "failed", "cancelled"]
"""Lifecycle of a model run."""


class StoreRecord(BaseModel):
    """Base of the store's own records: immutable, strict about unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class ConversationRecord(StoreRecord):
    """A conversation and its root branch."""

    id: str
    account_id: str
    title: str
    root_branch_id: str
    """The branch created with the conversation."""
    snapshot_seq: int
    """Highest ``seq`` handed out so far (0 for an empty conversation)."""
    created_at: datetime


class BranchRecord(StoreRecord):
    """A branch of a conversation."""

    id: str
    conversation_id: str
    name: str
    parent_branch_id: str | None = None
    fork_message_id: str | None = None
    fork_seq: int | None = None
    """``seq`` of the fork message: the last parent node the branch sees."""
    created_at: datetime


class ModelRunRecord(StoreRecord):
    """One model call and its outcome."""

    id: str
    conversation_id: str
    branch_id: str
    participant_id: str
    runtime_kind: RuntimeKind
    status: ModelRunStatus
    provider: str | None = None
    model: str | None = None
    message_id: str | None = None
    """The message the run produced, once finished."""
    workflow_id: str | None = None
    parent_model_run_id: str | None = None
    context_assembly_id: str | None = None
    error: str | None = None
    usage: dict[str, Any] = {}
    started_at: datetime
    finished_at: datetime | None = None


class AssemblyTimings(StoreRecord):
    """How long each phase of one assembly took, in milliseconds."""

    graph_query_ms: float = 0.0
    """Loading lineage and candidates from Postgres."""
    policy_ms: float = 0.0
    """Running the pure policy assembler."""
    serialise_ms: float = 0.0
    """Rendering and hashing the provider messages."""


class ReplayInputs(StoreRecord):
    """Everything besides the graph at its snapshot that an assembly was computed from.

    With these, the candidates read back at the assembly's ``snapshot_seq`` and the
    policy its ``policy_version`` names, the assembly can be recomputed
    (:func:`activities.replay.recompute_assembly`).
    """

    boundary: GenerationBoundary
    """The whole generation boundary: evidence requests, route limit, token budget, skill catalog, time ..."""
    candidate_limits: dict[str, int]
    """The ``store.candidates.CandidateLimits`` the candidates were loaded with, by field name."""
    user_memory_seq: int
    """The account's highest user-memory ``seq`` at load time (0: none yet)."""
    user_memory_ids: tuple[str, ...]
    """The user memories loaded, oldest first."""
    previous_assembly_id: str | None = None
    """The assembly whose epoch this one could continue; ``None`` when there was none."""


class StoredContextAssembly(StoreRecord):
    """A saved assembly: the policy's record, its decisions and its boundary."""

    id: str
    conversation_id: str
    branch_id: str
    participant_id: str
    model_run_id: str | None = None
    runtime_kind: RuntimeKind
    provider_route: str
    generation_at: datetime
    """The boundary's logical time."""
    record: ContextAssemblyRecord
    decisions: tuple[PolicyDecisionRecord, ...]
    """In the order the policy took them."""
    messages: tuple[dict[str, Any], ...] | None = None
    """The provider messages, when loaded (``with_messages=True``)."""
    timings: AssemblyTimings
    created_at: datetime
    replay: ReplayInputs | None = None
    """What recomputing the assembly needs; ``None`` for an assembly stored before replay inputs were."""
