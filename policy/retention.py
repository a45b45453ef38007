"""Retention: what a retention class does to a stored record, and when.

Every artifact, tool memory and context assembly (its stored messages: the
assembly *trace*) carries a :class:`RetentionRule`, set when it is written
from the tool's spec (:attr:`policy.tools.ToolSpec.retention`) or, when the
agent declares one, the agent's override (:class:`RetentionSpec` in the agents
file). A garbage-collection run (``dossier retention run``) asks
:func:`retention_action` what the rule does to each record at its logical
``now`` and applies the answer in the store. Pure: no clock, no I/O.

The classes, for an artifact (the raw tool result):

* ``keep``: never collected.
* ``archive``: after N days the bytes move to the archive prefix
  (``archive/accounts/<account>/sha256/<hex>``, for a colder storage class)
  and the row is marked ``archived``; rehydration then reports the raw result
  unavailable, naming the reason (``raw archived by retention``). The bytes
  are still there for an operator, not for a model.
* ``redact``: after N days the raw bytes and arguments are deleted; the row
  (sha256, size, provenance) and the memory's compact text stay, so the
  memory still cites a row that says what happened to its evidence.
* ``hash_only``: after N days the raw bytes and arguments are deleted; sha256
  and size stay (proof of what was seen, nothing of it).
* ``delete``: after N days the row and its bytes are deleted; every memory
  that cites it is marked ``missing_source``, never left pointing at nothing.

For a tool memory, ``redact`` and ``hash_only`` replace its text and payload
(the title, summary, payload and limitations) with a marker, keeping its
provenance and links; ``hash_only`` also keeps the sha256 of what was removed;
``delete`` deletes the row; ``archive`` keeps it (memories are small and live
in Postgres). For an assembly trace, every class but ``keep`` drops the stored
provider messages after N days while the decisions, counts and content hash
stay: such an assembly is no longer replayable byte for byte, and says so
(``trace_state``).

Objects a tool call wrote that no succeeded result claimed (``stored_objects``
rows left ``pending``) have no rule of their own: a collection sweeps them once
:data:`UNCLAIMED_OBJECT_GRACE` has passed since their last write
(:func:`unclaimed_object_due`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from pydantic import Field, model_validator

from policy.records import FAILED_SEPARATOR, Record, canonical_json


class RetentionClass(StrEnum):
    """What happens to a record once its retention period has passed."""

    KEEP = "keep"
    ARCHIVE = "archive"
    REDACT = "redact"
    HASH_ONLY = "hash_only"
    DELETE = "delete"


class RetentionState(StrEnum):
    """What retention has done to a record so far (``delete`` leaves no row to say so)."""

    LIVE = "live"
    ARCHIVED = "archived"
    REDACTED = "redacted"
    HASH_ONLY = "hash_only"


class RecordKind(StrEnum):
    """The records a retention rule applies to."""

    ARTIFACT = "artifact"
    MEMORY = "memory"
    TRACE = "trace"


class RetentionRule(Record):
    """A retention class and the days a record is kept as written before it applies."""

    kind: RetentionClass = RetentionClass.KEEP
    """The class (``keep``: never collected)."""
    after_days: int = Field(default=0, ge=0)
    """Days after the record was written; 0 applies at the next collection."""

    @model_validator(mode="after")
    def _keep_has_no_days(self) -> RetentionRule:
        if self.kind is RetentionClass.KEEP and self.after_days:
            raise ValueError("a 'keep' rule never applies: give it no after_days")
        return self


KEEP = RetentionRule()
"""The default rule: nothing is ever collected unless a tool or an agent says so."""


class RetentionSpec(Record):
    """Retention rules per record kind (a tool spec's, or an agent's override); ``None``: not set here."""

    artifacts: RetentionRule | None = None
    """The raw results."""
    memories: RetentionRule | None = None
    """The compact memories derived from them."""
    traces: RetentionRule | None = None
    """The stored provider messages of context assemblies (an agent's only; a tool has none)."""

    def rule(self, kind: RecordKind) -> RetentionRule | None:
        """This spec's rule for ``kind``, if it sets one."""
        return {RecordKind.ARTIFACT: self.artifacts, RecordKind.MEMORY: self.memories,
                RecordKind.TRACE: self.traces}[kind]


def effective_rule(kind: RecordKind, tool: RetentionSpec | None, agent: RetentionSpec | None) -> RetentionRule:
    """The rule a new record is written with: the agent's override, else the tool's, else keep.

    The agent wins because it is the operator's decision for one deployment (an
    agent holding health data deletes after 7 days whatever the tool author chose).

    Args:
        tool: the tool spec's retention (``None`` for traces, or a tool that sets none).
        agent: the agent's override, if any.
    """
    for source in (agent, tool):
        found = source.rule(kind) if source is not None else None
        if found is not None:
            return found
    return KEEP


class RetentionAction(StrEnum):
    """What a collection run does to one record now."""

    NONE = "none"
    ARCHIVE = "archive"
    REDACT = "redact"
    HASH_ONLY = "hash_only"
    DELETE = "delete"
    DROP_TRACE = "drop_trace"
    """An assembly's stored messages are dropped (its decisions and counts stay)."""


_DONE: dict[RetentionClass, RetentionState] = {
    RetentionClass.ARCHIVE: RetentionState.ARCHIVED,
    RetentionClass.REDACT: RetentionState.REDACTED,
    RetentionClass.HASH_ONLY: RetentionState.HASH_ONLY,
}


def due_at(rule: RetentionRule, written_at: datetime) -> datetime | None:
    """When ``rule`` applies to a record written at ``written_at`` (``None``: never)."""
    if rule.kind is RetentionClass.KEEP:
        return None
    return written_at + timedelta(days=rule.after_days)


def retention_action(
    kind: RecordKind, rule: RetentionRule, state: RetentionState, written_at: datetime, now: datetime
) -> RetentionAction:
    """What a collection at ``now`` does to one record.

    Nothing before the rule is due, nothing for ``keep``, and nothing twice: a
    record already in the class's end state is left alone, so a repeated or
    resumed collection is a no-op. A record whose bytes are already gone
    (redacted, hash-only) is never archived or redacted again by a changed rule;
    ``delete`` still deletes it.

    Args:
        kind: artifact, memory or trace.
        state: what retention already did to it.
        written_at: when it was written.
        now: the collection's logical time.
    """
    due = due_at(rule, written_at)
    if due is None or now < due:
        return RetentionAction.NONE
    if kind is RecordKind.TRACE:
        return RetentionAction.DROP_TRACE if state is RetentionState.LIVE else RetentionAction.NONE
    if rule.kind is RetentionClass.DELETE:
        return RetentionAction.DELETE
    if kind is RecordKind.MEMORY and rule.kind is RetentionClass.ARCHIVE:
        return RetentionAction.NONE  # a memory is compact text in Postgres: nothing to move
    if state is not RetentionState.LIVE:
        return RetentionAction.NONE
    return RetentionAction(rule.kind.value) if _DONE.get(rule.kind) else RetentionAction.NONE


EARLIEST_COLLECTION = datetime(1970, 1, 1, tzinfo=UTC)
LATEST_COLLECTION = datetime(9000, 1, 1, tzinfo=UTC)
"""A collection's logical time lies between these: a rule's period (days) and the sweep's grace are added to
and taken from it, and a date near year 1 or 9999 would overflow that arithmetic."""


def check_collection_time(now: datetime) -> datetime:
    """``now`` if it can be a collection's logical time: with a time zone, within the supported range.

    Raises:
        ValueError: a naive time (``2027-01-01``: which zone?) or one outside 1970-9000, saying which.
    """
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError(f"a collection time needs a time zone (e.g. {now.isoformat()}+00:00), got {now.isoformat()}")
    if not EARLIEST_COLLECTION <= now <= LATEST_COLLECTION:
        raise ValueError(f"a collection time must lie between {EARLIEST_COLLECTION.date()} and "
                         f"{LATEST_COLLECTION.date()}, got {now.isoformat()}")
    return now


UNCLAIMED_OBJECT_GRACE = timedelta(days=1)
"""How long an object a tool call wrote may stay unclaimed (no succeeded result refers to it) before the
sweep removes it. Far longer than any attempt runs (tool timeouts are minutes), so the sweep never takes
bytes from a write still in flight; a later retry records the write again and puts the bytes back."""


def unclaimed_object_due(written_at: datetime, now: datetime, grace: timedelta = UNCLAIMED_OBJECT_GRACE) -> bool:
    """Whether a collection at ``now`` sweeps an unclaimed object last written at ``written_at``.

    Args:
        written_at: when the latest attempt recorded the write (just before its put).
        now: the collection's logical time.
        grace: how long an unclaimed object is left alone.

    Returns:
        True once the grace period has passed.
    """
    return now - written_at >= grace


RAW_ARCHIVED_REASON = "raw archived by retention"
"""What a rehydration of an archived artifact reports."""
RAW_REDACTED_REASON = "raw removed by retention"
"""What a rehydration of a redacted or hash-only artifact reports."""
REDACTED_MARKER = "[redacted by retention]"
"""The text a redacted memory shows instead of its content."""

ARGUMENTS_REDACTED = "arguments redacted by retention"
"""What a tool call shows instead of its arguments once the artifact it produced was redacted or deleted."""
ARGUMENTS_REDACTED_KEY = "redacted_by_retention"
"""The key that marks a call's arguments as replaced by :func:`redacted_arguments`."""


def arguments_redacted(arguments: Mapping[str, Any]) -> bool:
    """Whether a call's arguments are the retention marker rather than what the model wrote."""
    return (set(arguments) == {ARGUMENTS_REDACTED_KEY, "sha256"}
            and arguments[ARGUMENTS_REDACTED_KEY] == ARGUMENTS_REDACTED)


def redacted_arguments(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The marker a call's arguments are replaced by: the text, and the sha256 of the canonical original.

    Idempotent: the marker itself is returned unchanged, so a repeated batch keeps the first hash.
    """
    if arguments_redacted(arguments):
        return dict(arguments)
    digest = hashlib.sha256(canonical_json(dict(arguments)).encode()).hexdigest()
    return {ARGUMENTS_REDACTED_KEY: ARGUMENTS_REDACTED, "sha256": digest}


RESULT_REMOVED_TEXT = ("Result removed by retention (rule: delete): nothing of what the call returned is kept. "
                       "Do not assume what it returned.")
"""What a call whose result retention deleted shows in place of the result (never "no result yet")."""


def result_removed(status: str, arguments: Mapping[str, Any], has_result: bool) -> bool:
    """Whether a call's result was deleted by retention: the call ended, its result is gone, its arguments
    are the marker (a deleted result takes its call's arguments with it, in the same transaction).

    Args:
        status: the call's status (``succeeded`` or ``failed`` for a call that ended).
        arguments: the call's arguments as stored.
        has_result: whether the call's artifact is in the graph.
    """
    return not has_result and status in ("succeeded", "failed") and arguments_redacted(arguments)


POINTER_REMOVED = "pointer removed by retention"
"""What a recall's JSON pointer reads once the raw result it pointed into was removed (a pointer names keys of
the result: content)."""


def scrubbed_reason(reason: str, pointers: Iterable[str]) -> str:
    """A decision's reason without the JSON pointers of a removed result.

    A recall's or rehydration's reason names its locator in parentheses (``exact evidence requested
    (/patients/Jane Roe), up to 4096 bytes``: :func:`policy.rehydration.describe`); each such pointer becomes
    :data:`POINTER_REMOVED`. Ids, counts and the rest of the reason stay. Idempotent.
    """
    for pointer in sorted(set(pointers), key=lambda p: (-len(p), p)):
        if pointer:
            reason = reason.replace(f"({pointer})", f"({POINTER_REMOVED})")
    return reason


def redacted_title(tool_name: str, title: str, summary: str) -> tuple[str, str]:
    """A memory's title and summary without the call's arguments, once retention took them from the call.

    A derived memory's title is ``name(arguments)`` and its summary starts with the title
    (:func:`policy.derive.derive_memory`); both then read ``name(arguments redacted by retention)``. A title
    of another form (a promoted subagent report's) names no call arguments and is left as it is.

    Args:
        tool_name: the tool the memory's source call ran.

    Returns:
        ``(title, summary)``.
    """
    if not title.startswith(f"{tool_name}("):
        return title, summary
    bare = f"{tool_name}({ARGUMENTS_REDACTED})"
    return bare, bare + summary[len(title):] if summary.startswith(title) else summary


# --------------------------------------------------------------------------- what text a call owns

ERROR_REMOVED = "error text removed by retention"
"""What a failed call shows instead of its error text once its result was redacted, hash-only or deleted."""

SUBJECT_REDACTED_MARK = ":redacted:"
"""``<tool>:redacted:<sha256>``: a memory's subject once retention took the arguments it was built from."""

CALL_TEXT: dict[str, tuple[str, ...]] = {
    "tool_calls": ("arguments", "last_error", "history[].error"),
    "messages": ("tool_calls[].arguments",),
    "tool_artifacts": ("the raw bytes", "arguments", "error"),
    "tool_memories": ("title", "summary", "payload", "subject_key"),
    "evidence_requests": ("locator.pointer", "decision.reason"),
    "policy_decisions": ("reason",),
}
"""The text one tool call owns, by table and column: what the model wrote (its arguments), what the tool
returned (the raw result, or a failed call's error text, which is its result) and what Dossier derived from
either (a memory's title, summary, payload and subject; a recall's JSON pointer). ``redact``, ``hash_only``
and ``delete`` remove all of it in one transaction with the result, except what :data:`RULE_KEEPS` names.
The hardening suite's retention part checks the whole account against this (a canary in every field)."""

RULE_KEEPS: dict[RetentionClass, str] = {
    RetentionClass.REDACT: "the memory's compact text of a succeeded result (what the result said, less the "
                           "arguments) until the memory's own rule takes it; sha256 and size",
    RetentionClass.HASH_ONLY: "sha256 and size of the result and of the memory's text; nothing else",
    RetentionClass.DELETE: "the memory's compact text of a succeeded result, marked missing_source, until "
                           "the memory's own rule takes it",
}
"""What of a call's text each removing rule leaves, beyond ids, names, statuses, counts and hashes."""


def _removed_error(text: str | None) -> str | None:
    return None if text is None else ERROR_REMOVED


def forgotten_call(arguments: Mapping[str, Any], last_error: str | None,
                   history: Iterable[Mapping[str, Any]]) -> tuple[dict[str, Any], str | None, list[dict[str, Any]]]:
    """A tool call row's text once retention removed its result: the arguments' marker, no error text.

    The attempt history keeps each attempt's number, status and time; an attempt's error becomes
    :data:`ERROR_REMOVED` (it was the result of that attempt). Idempotent.

    Returns:
        ``(arguments, last_error, history)``.
    """
    entries = [{**entry, "error": _removed_error(entry.get("error"))} for entry in history]
    return redacted_arguments(arguments), _removed_error(last_error), entries


def redacted_subject(tool_name: str, subject_key: str) -> str:
    """A memory's subject without the arguments it was built from: the tool and a sha256 of the subject.

    Equal subjects still give equal keys, so a later call with the same arguments still supersedes the
    memory (:func:`subject_keys`). Idempotent.
    """
    if SUBJECT_REDACTED_MARK in subject_key and subject_key.startswith(tool_name):
        return subject_key
    return f"{tool_name}{SUBJECT_REDACTED_MARK}{hashlib.sha256(subject_key.encode()).hexdigest()}"


def subject_keys(tool_name: str, subject_key: str) -> tuple[str, str]:
    """The keys a new memory's subject matches: itself, and the same subject after retention redacted it."""
    return subject_key, redacted_subject(tool_name, subject_key)


class ForgottenMemory(Record):
    """A memory's text once retention took its call's arguments (and, for a failed call, its error)."""

    title: str
    summary: str
    payload: dict[str, Any]
    subject_key: str


def forgotten_memory(tool_name: str, title: str, summary: str, payload: Mapping[str, Any], subject_key: str, *,
                     failed: bool) -> ForgottenMemory:
    """What a memory built from a call keeps once its result was redacted or deleted.

    The title (``name(arguments)``) and the summary that starts with it lose the arguments
    (:func:`redacted_title`); the subject becomes its hash (:func:`redacted_subject`). A failed call's
    summary and payload are its error text: they read ``name(arguments redacted by retention) FAILED: error
    text removed by retention`` and an empty payload. A succeeded call's compact text otherwise stays
    (:data:`RULE_KEEPS`). Idempotent.

    Args:
        tool_name: the tool the memory's source call ran.
        failed: whether the source call failed.
    """
    subject = redacted_subject(tool_name, subject_key)
    if title == REDACTED_MARKER:  # its own rule (or hash-only) already took its text
        return ForgottenMemory(title=title, summary=summary, payload=dict(payload), subject_key=subject)
    new_title, new_summary = redacted_title(tool_name, title, summary)
    new_payload = dict(payload)
    if failed:
        new_summary = f"{new_title}{FAILED_SEPARATOR}{ERROR_REMOVED}"
        new_payload = {}
    elif new_title != title:
        new_payload = {key: (value.replace(title, new_title, 1) if isinstance(value, str) else value)
                       for key, value in new_payload.items()}  # the brief summary starts with the title too
    return ForgottenMemory(title=new_title, summary=new_summary, payload=new_payload,
                           subject_key=subject)


__all__ = [
    "ARGUMENTS_REDACTED",
    "ARGUMENTS_REDACTED_KEY",
    "CALL_TEXT",
    "ERROR_REMOVED",
    "ForgottenMemory",
    "RULE_KEEPS",
    "SUBJECT_REDACTED_MARK",
    "KEEP",
    "POINTER_REMOVED",
    "RAW_ARCHIVED_REASON",
    "RAW_REDACTED_REASON",
    "REDACTED_MARKER",
    "RESULT_REMOVED_TEXT",
    "RecordKind",
    "RetentionAction",
    "RetentionClass",
    "RetentionRule",
    "RetentionSpec",
    "RetentionState",
    "UNCLAIMED_OBJECT_GRACE",
    "EARLIEST_COLLECTION",
    "LATEST_COLLECTION",
    "arguments_redacted",
    "check_collection_time",
    "due_at",
    "effective_rule",
    "forgotten_call",
    "forgotten_memory",
    "redacted_subject",
    "subject_keys",
    "redacted_arguments",
    "redacted_title",
    "result_removed",
    "retention_action",
    "scrubbed_reason",
    "unclaimed_object_due",
]
