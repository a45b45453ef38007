"""The seed-scenario language: a conversation as data, plus what must and must not reach the model.

A :class:`Scenario` is a list of steps replayed, in order, through the same
capture and memory-derivation code a live agent turn uses, then one model
call (:class:`Ask`) is assembled from the graph. ``required`` facts must be in
the assembled context; ``forbidden`` facts must not. Keys (``"analyst"``,
``"read_sales"``) name graph nodes inside a scenario; the runner maps them to
real ids.

Times are minutes after the scenario's ``start``: the graph never reads a
wall clock, so a scenario assembles identically on every run.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from policy.enums import (
    PrivacyClass,
    PromotionPolicy,
    RuntimeKind,
    ToolCallStatus,
    VisibilityScope,
)
from policy.tools import ToolSpec

SCENARIO_START = datetime(2026, 11, 30, 9, 0, tzinfo=timezone.utc)


class Step(BaseModel):
    """Base of every scenario step."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    at: float = 0.0
    """Minutes after the scenario start."""


class AddParticipant(Step):
    """A model or persona joins the conversation."""

    kind: Literal["participant"] = "participant"
    key: str
    name: str
    role: Literal["assistant", "moderator", "subagent"] = "assistant"
    system_prompt: str = ""
    provider: str = "scripted"
    model: str = "scripted:default"
    parent: str | None = None
    """Key of the participant that spawned this one (subagents)."""


class Fork(Step):
    """A new branch forks from ``parent`` at message ``at_message``."""

    kind: Literal["fork"] = "fork"
    key: str
    parent: str = "main"
    at_message: str


class Say(Step):
    """A transcript message. ``author=None`` is the human user."""

    kind: Literal["say"] = "say"
    key: str | None = None
    branch: str = "main"
    author: str | None = None
    text: str
    speaker_label: str | None = None
    directive: bool = False
    runtime: RuntimeKind = RuntimeKind.CHAT


class CallTool(Step):
    """An assistant message that calls one tool, and what the call returned.

    ``result`` is the raw payload exactly as the tool produced it. A failed
    call puts its error text in ``result``. A ``deferred``/``pending`` call has
    no result yet.
    """

    kind: Literal["tool"] = "tool"
    key: str
    branch: str = "main"
    participant: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: str | None = None
    content_type: str = "application/json"
    status: ToolCallStatus = ToolCallStatus.SUCCEEDED
    attempts: int = 1
    waiting_for: str | None = None
    retry_critical: bool = False
    runtime: RuntimeKind = RuntimeKind.CHAT
    privacy: PrivacyClass | None = None
    """Overrides the tool spec's privacy class."""
    visibility: VisibilityScope | None = None
    """Overrides the runtime kind's default visibility."""
    shared_with: tuple[str, ...] = ()
    promotion: PromotionPolicy = PromotionPolicy.NONE
    assistant_text: str = ""
    """Text the assistant wrote alongside the call (usually empty)."""


class Promote(Step):
    """A child run ended: its listed memories become visible to ``to``."""

    kind: Literal["promote"] = "promote"
    child: str
    """Key of the subagent participant whose run ended."""
    tools: tuple[str, ...] = ()
    """Keys of the child's tool calls whose file handles or failures are promoted."""
    outcome: Literal["succeeded", "failed", "timed_out"] = "succeeded"
    to: str
    """Key of the parent participant."""
    branch: str = "main"
    report: str | None = None
    """The child's final report, promoted as a conversation-visible memory."""


class RememberUser(Step):
    """A personalisation fact (user memory)."""

    kind: Literal["user_memory"] = "user_memory"
    text: str
    participant: str | None = None


class SetSkill(Step):
    """The state of an active skill."""

    kind: Literal["skill"] = "skill"
    participant: str
    branch: str = "main"
    skill: str
    state: dict[str, Any]
    active: bool = True


class Checkpoint(Step):
    """A continuation checkpoint."""

    kind: Literal["checkpoint"] = "checkpoint"
    participant: str
    branch: str = "main"
    checkpoint_kind: Literal["tool_loop", "subagent_batch", "parent_resume", "deferred_wait"]
    state: dict[str, Any]
    references: tuple[str, ...] = ()
    """Keys of tool calls whose memories the checkpoint relies on."""


class LoseArtifact(Step):
    """The raw bytes of a tool call's artifact disappear from the object store."""

    kind: Literal["lose_artifact"] = "lose_artifact"
    tool: str


# Discriminated by ``kind``: a step read from a seed file is validated against
# its own kind only, so a misspelt field is one error naming that field rather
# than one failed match per step type.
AnyStep = Annotated[
    AddParticipant | Fork | Say | CallTool | Promote | RememberUser | SetSkill | Checkpoint | LoseArtifact,
    Field(discriminator="kind"),
]


class Evidence(BaseModel):
    """Exact raw evidence the measured call asks for."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    tool: str
    """Key of the tool call whose artifact is rehydrated."""
    rows: tuple[int, int] | None = None
    lines: tuple[int, int] | None = None
    pointer: str | None = None


class Ask(BaseModel):
    """The model call being assembled and measured."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    participant: str
    branch: str = "main"
    runtime: RuntimeKind = RuntimeKind.CHAT
    provider_route: str = "scripted"
    at: float
    token_budget: int | None = None
    evidence: tuple[Evidence, ...] = ()


class Scenario(BaseModel):
    """One boundary case: steps, the measured call, and its fact checks."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    description: str
    tools: tuple[ToolSpec, ...] = ()
    """Specs of the tools the scenario uses (privacy, freshness, revalidation)."""
    steps: tuple[AnyStep, ...]
    ask: Ask
    required: tuple[str, ...]
    """Facts (verbatim substrings) that must be in the assembled context.

    ``{a:KEY}``, ``{m:KEY}`` and ``{t:KEY}`` expand to the short ids the
    assembler renders for the artifact, the memory and the tool call of the
    tool step ``KEY`` (e.g. ``"[m:{m:read_sales}]"``)."""
    forbidden: tuple[str, ...]
    """Facts (verbatim substrings) that must not be in the assembled context."""
