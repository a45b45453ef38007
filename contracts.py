"""What crosses the client / workflow / activity boundary: ids and references only.

Every workflow input, result, signal and activity argument is one of these
models, sent with the SDK's pydantic data converter. None of them carries a
transcript, an assembled prompt or a tool payload: those live in the graph and
the artifact store, and each step loads what it needs by id. That keeps a
turn's workflow history small however long the conversation grows.

These are durable contracts: add optional fields with defaults; never rename
or add a required field in place. Unknown fields are ignored, so during a
rolling deploy an older worker still accepts a payload that a newer one sent
with an extra optional field.

The names under which activities, workflows, signals and queries are
registered are here too (:class:`ActivityName`, :class:`WorkflowName`): they
are stored in workflow histories, so both sides use these constants and a
name, once deployed, never changes.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from policy.enums import RuntimeKind
from policy.retention import check_collection_time

TASK_QUEUE = "dossier"
"""Default task queue (``TEMPORAL_TASK_QUEUE`` overrides it)."""


class ActivityName(StrEnum):
    """Every activity, under the name the worker registers and the workflows call.

    Stored in workflow histories: renaming one breaks every running workflow.
    """

    START_MODEL_RUN = "start_model_run"
    ASSEMBLE_CONTEXT = "assemble_context"
    CALL_MODEL = "call_model"
    EXECUTE_TOOL = "execute_tool"
    FINALIZE_TOOL_FAILURE = "finalize_tool_failure"
    CONFIRM_ANSWER = "confirm_answer"
    PROMOTE_CHILD = "promote_child"
    WRITE_CHECKPOINT = "write_checkpoint"
    WRITE_SCHEDULED_PROMPT = "write_scheduled_prompt"
    COLLECT_RETENTION = "collect_retention"
    PLAN_ACCOUNT_DELETION = "plan_account_deletion"
    DELETE_ACCOUNT_STEP = "delete_account_step"


class WorkflowName(StrEnum):
    """Every workflow type, under the name the worker registers and clients start."""

    AGENT_TURN = "AgentTurn"
    MULTI_MODEL_TURN = "MultiModelTurn"
    SUBAGENT_BATCH = "SubagentBatch"
    PARENT_RESUME = "ParentResume"
    DISCUSSION = "Discussion"
    SCHEDULED_JOB = "ScheduledJob"
    RETENTION = "Retention"
    DELETE_ACCOUNT = "DeleteAccount"


CONVERSATION_SEARCH_ATTRIBUTE = "DossierConversationId"
"""The Keyword search attribute naming a workflow's conversation (``workflows.visibility``); an account
deletion finds the account's running workflows by it."""

ANSWER_TOOL_SIGNAL = "answer_tool"
"""Signal of :class:`WorkflowName.AGENT_TURN`: a deferred tool call was answered (:class:`AnswerToolInput`)."""

STATUS_QUERY = "status"
"""Query of :class:`WorkflowName.AGENT_TURN`: where the turn is (:class:`TurnStatus`)."""

CONTEXT_TOO_LONG_ERROR = "ContextTooLongError"
"""``ApplicationError.type`` of a ``call_model`` failure whose context the provider refused as too long
for the model's window. Non-retryable; its first detail is the token budget (an int) to re-assemble
within, and the turn re-assembles once (see :class:`AssembleInput.reassembly_of_model_run_id`)."""

MAX_SCHEDULE_PROMPT_CHARS = 2000
"""A scheduled job's prompt is configuration, not conversation: keep it short."""


class Contract(BaseModel):
    """Base of every boundary model: immutable; unknown fields (from a newer version) ignored."""

    model_config = ConfigDict(frozen=True, extra="ignore")


class Scope(Contract):
    """Where a turn happens: account, conversation and branch."""

    account_id: str
    conversation_id: str
    branch_id: str


# --------------------------------------------------------------------------- agent turn


class TurnInput(Contract):
    """One agent turn: assemble, call the model, run its tools, until it answers."""

    scope: Scope
    participant_id: str
    """Whose model runs (its provider and model come from the participant)."""
    runtime_kind: RuntimeKind = RuntimeKind.CHAT
    token_budget: int | None = None
    """Prompt budget per model call (``None``: the policy's default)."""
    model_timeout_seconds: float | None = Field(default=None, gt=0)
    """Start-to-close timeout of each model call (``None``: the workflows' default, 10 minutes)."""
    parent_model_run_id: str | None = None
    """For a subagent child: the run that spawned it."""
    checkpoint_id: str | None = None
    """Resume from this ContinuationCheckpoint (parent resume, continue-as-new)."""
    max_rounds: int = Field(default=12, ge=1, le=200)
    """Model calls this turn may make before it stops with ``status="max_rounds"``."""
    rounds_per_run: int = Field(default=6, ge=1)
    """Model calls per workflow run; after that the turn continues as new from a checkpoint."""
    round: int = 0
    """Model calls made so far (carried across continue-as-new)."""
    model_run_ids: tuple[str, ...] = ()
    """Runs made so far (carried across continue-as-new)."""
    tool_call_ids: tuple[str, ...] = ()
    """Tool calls made so far (carried across continue-as-new, so a subagent's promotion sees all of them)."""


class TurnResult(Contract):
    """How a turn ended, by reference."""

    status: Literal["answered", "max_rounds", "failed"]
    message_id: str | None = None
    """The assistant message with the answer."""
    model_run_ids: tuple[str, ...] = ()
    tool_call_ids: tuple[str, ...] = ()
    participant_id: str


class AnswerToolInput(Contract):
    """Signal: the human answered a deferred tool call (its artifact is already captured)."""

    tool_call_id: str


class TurnStatus(Contract):
    """Query result: where a turn is."""

    round: int
    waiting_for_tool_call_ids: tuple[str, ...] = ()
    model_run_ids: tuple[str, ...] = ()


# --------------------------------------------------------------------------- activities


class ModelRunInput(Contract):
    """Start one model run (idempotent on ``model_run_id``)."""

    scope: Scope
    participant_id: str
    model_run_id: str
    runtime_kind: RuntimeKind
    parent_model_run_id: str | None = None


class AssembleInput(Contract):
    """Assemble the context of one model run and persist it."""

    scope: Scope
    participant_id: str
    model_run_id: str
    assembly_id: str
    runtime_kind: RuntimeKind
    now: datetime
    """The workflow's time: assemblies are reproducible from the history."""
    token_budget: int | None = None
    checkpoint_id: str | None = None
    """A checkpoint this run resumes from (its restore is logged as a PolicyDecision)."""
    reassembly_of_model_run_id: str | None = None
    """The run whose context the provider refused as too long: this assembly is its smaller retry
    (logged as a PolicyDecision, with the refusal)."""


class AssembleResult(Contract):
    """The persisted assembly, with the figures a caller shows."""

    assembly_id: str
    legacy_tokens: int
    assembled_tokens: int


class ToolStepInput(Contract):
    """One tool call the model made, and how the workflow must run it."""

    tool_call_id: str
    deferred: bool = False
    max_attempts: int = 3
    timeout_seconds: float = 60.0
    heartbeat_seconds: float | None = None


class CallModelInput(Contract):
    """Call the participant's model on a persisted assembly."""

    scope: Scope
    participant_id: str
    model_run_id: str
    assembly_id: str
    runtime_kind: RuntimeKind


class ModelStepResult(Contract):
    """What the model did: answered (a message) or called tools (plans)."""

    model_run_id: str
    message_id: str | None = None
    """The assistant message written for this step."""
    answered: bool
    tools: tuple[ToolStepInput, ...] = ()


class ToolCallInput(Contract):
    """A tool call by id: what ``execute_tool`` and ``finalize_tool_failure`` take."""

    account_id: str
    tool_call_id: str


class ToolStepResult(Contract):
    """A tool call's captured outcome."""

    tool_call_id: str
    status: Literal["succeeded", "failed"]
    artifact_id: str
    memory_id: str


class CheckpointInput(Contract):
    """Write a ContinuationCheckpoint."""

    scope: Scope
    participant_id: str
    kind: Literal["tool_loop", "subagent_batch", "parent_resume", "deferred_wait"]
    model_run_ids: tuple[str, ...] = ()
    """Runs whose state the checkpoint summarises (tool loop)."""
    children: tuple[SubagentChildResult, ...] = ()
    """Subagent outcomes (subagent batch)."""
    next_step: str = ""


class SubagentChildResult(Contract):
    """How one subagent child ended, and what was promoted from it."""

    participant_id: str
    status: Literal["succeeded", "failed", "timed_out"]
    promoted_memory_ids: tuple[str, ...] = ()
    workflow_id: str


class PromoteInput(Contract):
    """Promote a finished child's report, file handles and failures to its parent."""

    scope: Scope
    child_participant_id: str
    parent_participant_id: str
    outcome: Literal["succeeded", "failed", "timed_out"]
    child_message_id: str | None = None
    """The child's final answer (its report), when it answered."""
    tool_call_ids: tuple[str, ...] = ()


class PromoteResult(Contract):
    """The memories now visible to the parent."""

    memory_ids: tuple[str, ...]


class ScheduledPromptInput(Contract):
    """Write the user message that opens one scheduled run."""

    scope: Scope
    job_name: str
    prompt: str = Field(max_length=MAX_SCHEDULE_PROMPT_CHARS)
    fired_at: datetime


# --------------------------------------------------------------------------- other workflows


class MultiModelInput(Contract):
    """Several participants answer the same user message, each with isolated tool state."""

    scope: Scope
    participant_ids: tuple[str, ...] = Field(min_length=1)
    token_budget: int | None = None
    model_timeout_seconds: float | None = Field(default=None, gt=0)
    """Start-to-close timeout of each model call (``None``: the workflows' default, 10 minutes)."""


class MultiModelResult(Contract):
    results: tuple[TurnResult, ...]


class SubagentChildInput(Contract):
    """One subagent: its participant (its task message is already in the graph)."""

    participant_id: str
    timeout_seconds: float = 600.0


class SubagentBatchInput(Contract):
    """A parent delegates to subagents, then resumes from their promoted results."""

    scope: Scope
    parent_participant_id: str
    children: tuple[SubagentChildInput, ...] = Field(min_length=1)
    next_step: str = "merge the subagents' findings and answer the user"
    resume: bool = True
    """Run the parent resume turn once every child has ended."""
    model_timeout_seconds: float | None = Field(default=None, gt=0)
    """Start-to-close timeout of each model call (``None``: the workflows' default, 10 minutes)."""


class SubagentBatchResult(Contract):
    children: tuple[SubagentChildResult, ...]
    checkpoint_id: str
    resume: TurnResult | None = None


class ParentResumeInput(Contract):
    """Resume the parent from a subagent-batch checkpoint."""

    scope: Scope
    parent_participant_id: str
    checkpoint_id: str
    token_budget: int | None = None
    model_timeout_seconds: float | None = Field(default=None, gt=0)
    """Start-to-close timeout of each model call (``None``: the workflows' default, 10 minutes)."""


class DiscussionInput(Contract):
    """Participants take turns under a moderator; the opening message is in the graph."""

    scope: Scope
    participant_ids: tuple[str, ...] = Field(min_length=2)
    rounds: int = Field(default=2, ge=1, le=20)
    token_budget: int | None = None
    model_timeout_seconds: float | None = Field(default=None, gt=0)
    """Start-to-close timeout of each model call (``None``: the workflows' default, 10 minutes)."""


class DiscussionResult(Contract):
    turns: tuple[TurnResult, ...]


class ScheduledJobInput(Contract):
    """What a Temporal Schedule starts on every fire."""

    scope: Scope
    participant_id: str
    job_name: str
    prompt: str = Field(max_length=MAX_SCHEDULE_PROMPT_CHARS)
    model_timeout_seconds: float | None = Field(default=None, gt=0)
    """Start-to-close timeout of each model call (``None``: the workflows' default, 10 minutes)."""


class RetentionRunInput(Contract):
    """One garbage-collection run (what the retention schedule starts)."""

    now: datetime | None = None
    """The logical time rules are applied at (``None``: the workflow's own time); with a time zone, 1970-9000."""
    batch_size: int = Field(default=200, gt=0, le=5000)
    """Rows per activity."""

    @field_validator("now")
    @classmethod
    def _collection_time(cls, now: datetime | None) -> datetime | None:
        return check_collection_time(now) if now is not None else None


class RetentionBatchInput(Contract):
    """One bounded batch of one record kind."""

    kind: Literal["artifact", "memory", "trace", "object"]
    """The record kind; ``object``: the sweep of unclaimed stored objects (``store.object_sweep``)."""
    now: datetime
    after_id: str | None = None
    """The cursor: ids greater than this one."""
    batch_size: int = Field(default=200, gt=0, le=5000)


class RetentionBatchResult(Contract):
    """What one batch did (counts only)."""

    last_id: str | None = None
    done: bool = True
    scanned: int = 0
    actions: dict[str, int] = Field(default_factory=dict)


class RetentionRunResult(Contract):
    """What a whole run did: rows per ``kind:action``."""

    now: datetime
    actions: dict[str, int] = Field(default_factory=dict)


class AccountDeletionInput(Contract):
    """Delete every row and object of an account."""

    account_id: str
    batch_size: int = Field(default=500, gt=0, le=5000)
    """Rows or objects per activity."""
    plan: list[str] | None = None
    """Where a continued run resumes: the steps (from the first run's plan), the current one first."""
    rows_deleted: int = 0
    objects_deleted: int = 0


class AccountDeletionStepInput(Contract):
    """One bounded step of an account deletion (see :func:`store.account_deletion.deletion_plan`)."""

    account_id: str
    step: str
    batch_size: int = Field(default=500, gt=0, le=5000)
    rows_deleted: int = 0
    """Totals so far (written by the tombstone step)."""
    objects_deleted: int = 0


class AccountDeletionResult(Contract):
    """What the deletion removed."""

    rows_deleted: int = 0
    objects_deleted: int = 0


CheckpointInput.model_rebuild()

__all__ = [
    "ANSWER_TOOL_SIGNAL",
    "CONTEXT_TOO_LONG_ERROR",
    "MAX_SCHEDULE_PROMPT_CHARS",
    "STATUS_QUERY",
    "TASK_QUEUE",
    "AccountDeletionInput",
    "AccountDeletionResult",
    "AccountDeletionStepInput",
    "ActivityName",
    "AnswerToolInput",
    "AssembleInput",
    "AssembleResult",
    "CallModelInput",
    "CheckpointInput",
    "Contract",
    "DiscussionInput",
    "DiscussionResult",
    "ModelRunInput",
    "ModelStepResult",
    "MultiModelInput",
    "MultiModelResult",
    "ParentResumeInput",
    "PromoteInput",
    "PromoteResult",
    "ScheduledJobInput",
    "ScheduledPromptInput",
    "Scope",
    "RetentionBatchInput",
    "RetentionBatchResult",
    "RetentionRunInput",
    "RetentionRunResult",
    "RuntimeKind",
    "SubagentBatchInput",
    "SubagentBatchResult",
    "SubagentChildInput",
    "SubagentChildResult",
    "ToolCallInput",
    "ToolStepInput",
    "ToolStepResult",
    "TurnInput",
    "TurnResult",
    "TurnStatus",
    "WorkflowName",
]
