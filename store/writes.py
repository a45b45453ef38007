"""What a caller writes: one typed record per new row, shared by the live writes and the bulk loader.

:func:`store.messages.append_message` and :meth:`store.bulk.GraphBatch.append_message` take a
:class:`NewMessage`; :func:`store.tools.record_tool_call` and :meth:`~store.bulk.GraphBatch.record_tool_call`
a :class:`NewToolCall`. Each record turns itself into its row with the ``seq`` the writer allocated, so
the two paths cannot drift apart column by column.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from policy.enums import MessageRole, PrivacyClass, RuntimeKind, ToolCallStatus, VisibilityScope
from policy.records import ToolCallRequest, bounded_key
from policy.tools import default_visibility
from store._sql import new_id, utcnow


@dataclass(frozen=True, kw_only=True)
class NewMessage:
    """A transcript message to append to ``branch_id``; idempotent on ``message_id`` when one is given."""

    branch_id: str
    role: MessageRole
    content: str
    author_participant_id: str | None = None
    """``None`` for the user."""
    speaker_label: str | None = None
    is_directive: bool = False
    """A moderator instruction that constrains later turns."""
    model_run_id: str | None = None
    """The run that wrote it; its privacy is then raised to what that run was shown (the model may repeat it)."""
    visibility: VisibilityScope = VisibilityScope.BRANCH
    shared_with: Sequence[str] = ()
    tool_calls: Sequence[ToolCallRequest | Mapping[str, Any]] = ()
    message_id: str | None = None
    privacy: PrivacyClass = PrivacyClass.USER

    def row(self, seq: int) -> dict[str, Any]:
        """The row without account and conversation, which the writer adds."""
        return {
            "id": self.message_id or new_id(),
            "branch_id": self.branch_id,
            "seq": seq,
            "role": MessageRole(self.role).value,
            "content": self.content,
            "author_participant_id": self.author_participant_id,
            "speaker_label": self.speaker_label,
            "is_directive": self.is_directive,
            "model_run_id": self.model_run_id,
            "visibility": VisibilityScope(self.visibility).value,
            "shared_with": list(self.shared_with),
            "privacy": PrivacyClass(self.privacy).value,
            "tool_calls": [_request(call).model_dump(mode="json") for call in self.tool_calls],
        }


@dataclass(frozen=True, kw_only=True)
class NewToolCall:
    """A tool call a model made on ``branch_id``; idempotent on the provider's ``call_id``."""

    branch_id: str
    participant_id: str
    call_id: str
    name: str
    arguments: Mapping[str, Any]
    model_run_id: str | None = None
    runtime_kind: RuntimeKind = RuntimeKind.CHAT
    status: ToolCallStatus = ToolCallStatus.PENDING
    retry_critical: bool | None = None
    """A failure must survive into later contexts verbatim (``None``: the tool spec's flag at ingest, else no)."""
    visibility: VisibilityScope | None = None
    """``None``: the runtime mode's default (:func:`policy.tools.default_visibility`)."""
    shared_with: Sequence[str] = ()
    privacy: PrivacyClass | None = None
    """``None``: the tool spec's class at ingest (``user`` written directly). The live write raises it to what
    the calling run was shown."""
    tool_call_id: str | None = None
    at: datetime | None = field(default=None)
    """When it was recorded; now when ``None``."""

    def row(self, seq: int) -> dict[str, Any]:
        """The row without account and conversation, with its first attempt in the history."""
        status = ToolCallStatus(self.status)
        retry_critical = bool(self.retry_critical)
        return {
            "id": self.tool_call_id or new_id(),
            "branch_id": self.branch_id,
            "seq": seq,
            "updated_seq": seq,
            "model_run_id": self.model_run_id,
            "participant_id": self.participant_id,
            "call_id": bounded_key(self.call_id),  # the unique index holds at most 2,704 bytes
            "name": self.name,
            "arguments": dict(self.arguments),
            "status": status.value,
            "retry_critical": retry_critical,
            "attempts": 1,
            "last_error": None,
            "waiting_for": None,
            "visibility": VisibilityScope(self.visibility or default_visibility(self.runtime_kind)).value,
            "shared_with": list(self.shared_with),
            "privacy": PrivacyClass(self.privacy or PrivacyClass.USER).value,
            "runtime_kind": RuntimeKind(self.runtime_kind).value,
            "history": [history_entry(seq=seq, attempt=1, status=status, error=None, waiting_for=None,
                                      retry_critical=retry_critical, at=self.at or utcnow())],
        }


def history_entry(*, seq: int, attempt: int, status: ToolCallStatus, error: str | None, waiting_for: str | None,
                  retry_critical: bool, at: datetime) -> dict[str, Any]:
    """One entry of a tool call's attempt history (``tool_calls.history``)."""
    return {
        "seq": seq,
        "attempt": attempt,
        "status": status.value,
        "error": error,
        "waiting_for": waiting_for,
        "retry_critical": retry_critical,
        "at": at.isoformat(),
    }


def _request(call: ToolCallRequest | Mapping[str, Any]) -> ToolCallRequest:
    return call if isinstance(call, ToolCallRequest) else ToolCallRequest.model_validate(call)
