"""What a tool receives, what it returns, and how it fails.

A tool is an async function ``run(context, arguments) -> ToolResult`` plus
the metadata the runtime needs around it: its :class:`~policy.tools.ToolSpec`
(privacy, freshness, how its result is summarised), the JSON schema the model
sees, and its Temporal retry, timeout and heartbeat settings.

Exceptions::

    ToolError                  the call produced no result
    ├── UnknownToolError       no tool of that name is registered        (permanent)
    ├── DeferredToolError      answered by a human, never executed       (permanent)
    ├── ToolArgumentError      missing or malformed arguments            (permanent)
    └── ToolExecutionError     the tool ran and failed                   (transient)

A tool whose schema is not valid JSON Schema is refused when it is registered,
with :class:`ToolSchemaError` (a ``ValueError``: a programming error, not a call's failure).

``ToolError.retryable`` says which side of that line an error is on, so the
activity that runs tools sorts failures with one attribute read.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policy.enums import STRICTEST_PRIVACY, PrivacyClass
from policy.tools import ToolSpec

if TYPE_CHECKING:
    from activities.deps import GraphDeps
    from activities.skills import SkillLibrary
    from store.artifacts import ArtifactStore, ObjectRef

ObjectRecorder = Callable[["ObjectRef", PrivacyClass], Awaitable[None]]
"""``record(ref, privacy)``: commit the graph's record of an object the call is about to put."""


class ToolError(Exception):
    """Base class of every tool failure."""

    retryable: bool = False
    """Whether running the same call again may succeed."""


class UnknownToolError(ToolError):
    """No tool of that name is registered."""


class DeferredToolError(ToolError):
    """A deferred tool was asked to execute; a human answers it instead."""


class ToolArgumentError(ToolError):
    """The arguments are missing, of the wrong type or name something that does not exist.

    Permanent: the same arguments fail the same way on every attempt.
    """


class ToolSchemaError(ValueError):
    """A tool's argument schema is not valid JSON Schema (or refers outside itself): refused at registration."""


class ToolExecutionError(ToolError):
    """The tool ran and failed; another attempt may succeed."""

    retryable = True


def _no_heartbeat(details: object) -> None:
    """Outside an activity nobody listens for heartbeats."""


@dataclass(frozen=True)
class ToolContext:
    """Everything a tool may use besides its arguments."""

    account_id: str
    """The account the call runs for; files it writes go under this account's prefix."""
    tool_call_id: str
    """The graph id of the tool call."""
    attempt: int
    """1-based Temporal activity attempt."""
    workspace: Path
    """Read-only data folder the workspace tools read."""
    artifacts: ArtifactStore | None
    """Object storage for ``files.write``; ``None`` where there is none (pure unit tests)."""
    heartbeat: Callable[[object], None] = field(default=_no_heartbeat)
    """Long tools call it regularly so Temporal can tell a slow tool from a dead worker."""
    privacy: PrivacyClass = STRICTEST_PRIVACY
    """The call's privacy class (its tool's, raised to what the calling model was shown): what anything
    the tool stores from its arguments is labelled. Unknown (no call behind the context) fails closed."""
    graph: GraphDeps | None = None
    """The runtime graph, for the built-in runtime tools that use it (``recall``, ``load_skill``); ``None``
    elsewhere."""
    skills: SkillLibrary | None = None
    """The worker's skills, for ``load_skill``; ``None`` elsewhere."""
    record_object: ObjectRecorder | None = None
    """Records an object in the graph before the tool puts it (``activities.ingest.object_recorder``), so no
    byte in the bucket is unknown to the graph; ``None`` where there is no graph, and a tool that stores
    objects then refuses to run."""


@dataclass(frozen=True)
class ToolResult:
    """A tool's successful output, exactly as produced (captured before any truncation)."""

    payload: bytes
    """The raw bytes."""
    content_type: str
    """Their MIME type (``text/csv``, ``application/json``, a file handle's type)."""
    privacy: PrivacyClass | None = None
    """The result's own class when it is stricter than the call's (``recall`` returns another record's bytes):
    the captured artifact is never looser than either. ``None``: the call's."""
    private: bool = False
    """Capture the result private to the calling participant (``recall`` of bytes only it may see)."""
    objects: tuple[ObjectRef, ...] = ()
    """Objects the tool put that the result refers to (a file handle's bytes): the capture of a succeeded
    result claims their records, and the sweep removes what no succeeded result claimed."""


ToolRunner = Callable[[ToolContext, dict[str, Any]], Awaitable[ToolResult]]
"""``run(context, arguments)``: arguments are already validated against the schema."""


@dataclass(frozen=True)
class RegisteredTool:
    """One tool: its policy metadata, its model-facing schema, its code and retry settings."""

    spec: ToolSpec
    """Privacy, freshness, ttl, revalidation, key args, retry-critical flag, summary fields, result kind."""
    description: str
    """What the tool does, for the model (OpenAI function description)."""
    parameters: dict[str, Any]
    """JSON schema of the arguments (OpenAI function ``parameters``)."""
    run: ToolRunner | None
    """The implementation; ``None`` for deferred tools."""
    deferred: bool = False
    """Answered by a human later (a document picker), never executed."""
    max_attempts: int = 3
    """Temporal retry policy: attempts before the call fails for good."""
    timeout_seconds: float = 60.0
    """Temporal start-to-close timeout of one attempt."""
    heartbeat_seconds: float | None = None
    """Temporal heartbeat timeout for long tools (``None``: no heartbeats expected)."""

    def __post_init__(self) -> None:
        if self.deferred != (self.run is None):
            raise ValueError(f"{self.spec.name}: a deferred tool has no run function, and only a deferred tool")
        if self.max_attempts < 1:
            raise ValueError(f"{self.spec.name}: max_attempts must be at least 1")

    @property
    def name(self) -> str:
        """The tool's canonical name (``workspace.read_csv``)."""
        return self.spec.name


__all__ = [
    "DeferredToolError",
    "ObjectRecorder",
    "RegisteredTool",
    "ToolArgumentError",
    "ToolContext",
    "ToolError",
    "ToolExecutionError",
    "ToolResult",
    "ToolRunner",
    "ToolSchemaError",
    "UnknownToolError",
]
