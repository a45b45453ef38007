"""The pure retention rules: what each class does to a record, when, and never twice."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from policy.enums import ToolCallStatus
from policy.lines import ShortIds, tool_call_line
from policy.records import ToolCallRecord
from policy.retention import (
    ARGUMENTS_REDACTED,
    KEEP,
    RecordKind,
    RetentionAction,
    RetentionClass,
    RetentionRule,
    RetentionSpec,
    RetentionState,
    UNCLAIMED_OBJECT_GRACE,
    arguments_redacted,
    due_at,
    effective_rule,
    redacted_arguments,
    POINTER_REMOVED,
    redacted_title,
    result_removed,
    retention_action,
    scrubbed_reason,
    unclaimed_object_due,
)
from policy.tools import ToolSpec

WRITTEN = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
A, M, T = RecordKind.ARTIFACT, RecordKind.MEMORY, RecordKind.TRACE
LIVE = RetentionState.LIVE


def rule(kind: str, days: int = 30) -> RetentionRule:
    return RetentionRule(kind=RetentionClass(kind), after_days=days)


@pytest.mark.parametrize(("kind", "record", "state", "expected"), [
    ("archive", A, LIVE, RetentionAction.ARCHIVE),
    ("redact", A, LIVE, RetentionAction.REDACT),
    ("hash_only", A, LIVE, RetentionAction.HASH_ONLY),
    ("delete", A, LIVE, RetentionAction.DELETE),
    # Already applied: a repeated or resumed collection does nothing.
    ("archive", A, RetentionState.ARCHIVED, RetentionAction.NONE),
    ("redact", A, RetentionState.REDACTED, RetentionAction.NONE),
    ("hash_only", A, RetentionState.HASH_ONLY, RetentionAction.NONE),
    # Bytes already gone are not archived or redacted again by a changed rule; delete still deletes.
    ("archive", A, RetentionState.REDACTED, RetentionAction.NONE),
    ("delete", A, RetentionState.ARCHIVED, RetentionAction.DELETE),
    # Memories: compact text in Postgres, nothing to archive.
    ("archive", M, LIVE, RetentionAction.NONE),
    ("redact", M, LIVE, RetentionAction.REDACT),
    ("hash_only", M, LIVE, RetentionAction.HASH_ONLY),
    ("delete", M, LIVE, RetentionAction.DELETE),
    # Traces: every class but keep drops the stored messages, once.
    ("archive", T, LIVE, RetentionAction.DROP_TRACE),
    ("delete", T, LIVE, RetentionAction.DROP_TRACE),
    ("redact", T, RetentionState.REDACTED, RetentionAction.NONE),
])
def test_each_class_once_it_is_due(kind: str, record: RecordKind, state: RetentionState,
                                   expected: RetentionAction) -> None:
    assert retention_action(record, rule(kind), state, WRITTEN, WRITTEN + timedelta(days=30)) is expected


@pytest.mark.parametrize("kind", ["archive", "redact", "hash_only", "delete"])
@pytest.mark.parametrize("record", list(RecordKind))
def test_nothing_happens_before_the_period_ends(kind: str, record: RecordKind) -> None:
    just_before = WRITTEN + timedelta(days=30) - timedelta(microseconds=1)
    assert retention_action(record, rule(kind), LIVE, WRITTEN, just_before) is RetentionAction.NONE
    assert due_at(rule(kind), WRITTEN) == WRITTEN + timedelta(days=30)


@pytest.mark.parametrize("record", list(RecordKind))
def test_keep_never_applies(record: RecordKind) -> None:
    assert retention_action(record, KEEP, LIVE, WRITTEN, WRITTEN + timedelta(days=100_000)) is RetentionAction.NONE
    assert due_at(KEEP, WRITTEN) is None


def test_zero_days_applies_at_the_next_collection() -> None:
    assert retention_action(A, rule("delete", 0), LIVE, WRITTEN, WRITTEN) is RetentionAction.DELETE


def test_bad_rules_are_refused() -> None:
    with pytest.raises(ValidationError):
        RetentionRule(kind=RetentionClass.DELETE, after_days=-1)
    with pytest.raises(ValidationError):
        RetentionRule(kind=RetentionClass.KEEP, after_days=3)  # a keep rule with a period says two things
    with pytest.raises(ValidationError):
        RetentionSpec.model_validate({"artifacts": {"kind": "shred"}})
    with pytest.raises(ValidationError):
        RetentionSpec.model_validate({"artifact": {"kind": "delete"}})  # a misspelt kind is not ignored


def test_the_agent_overrides_the_tool_and_keep_is_the_default() -> None:
    tool = RetentionSpec(artifacts=rule("delete"), memories=rule("redact"))
    agent = RetentionSpec(artifacts=rule("archive", 7), traces=rule("redact", 1))
    assert effective_rule(A, tool, agent) == rule("archive", 7)
    assert effective_rule(M, tool, agent) == rule("redact")  # the agent sets no memory rule: the tool's
    assert effective_rule(T, tool, agent) == rule("redact", 1)
    assert effective_rule(A, None, None) == KEEP
    assert effective_rule(T, tool, None) == KEEP  # a tool has no say in traces
    assert effective_rule(A, tool, RetentionSpec(artifacts=KEEP)) == KEEP  # an agent may keep what a tool drops


def test_a_tool_spec_carries_its_retention() -> None:
    spec = ToolSpec(name="health.read", retention={"artifacts": {"kind": "delete", "after_days": 7}})
    assert spec.retention is not None and spec.retention.artifacts == rule("delete", 7)
    assert ToolSpec(name="plain").retention is None


def test_a_decorated_tool_declares_its_retention() -> None:
    from dossier.tools import registered, tool

    @tool(retention={"artifacts": {"kind": "delete", "after_days": 30}})
    async def lookup(patient: str) -> dict:
        """Look a patient up."""
        return {"patient": patient}

    assert registered(lookup).spec.retention.artifacts == rule("delete", 30)


def test_redacted_arguments_keep_a_hash_and_are_idempotent() -> None:
    marker = redacted_arguments({"patient": "Jane Roe", "n": 1})
    assert arguments_redacted(marker) and "Jane Roe" not in str(marker)
    assert marker == redacted_arguments({"n": 1, "patient": "Jane Roe"})  # canonical: key order does not matter
    assert redacted_arguments(marker) == marker  # a repeated batch keeps the first hash
    assert marker != redacted_arguments({"patient": "John Doe", "n": 1})
    assert not arguments_redacted({"redacted_by_retention": ARGUMENTS_REDACTED})  # no hash: a model's own arguments


def test_a_call_whose_arguments_were_redacted_says_so_in_its_line() -> None:
    call = ToolCallRecord(id="tc-1", call_id="c1", name="crm.lookup", status=ToolCallStatus.FAILED,
                          arguments=redacted_arguments({"patient": "Jane Roe"}), branch_id="b", seq=1,
                          participant_id="p", last_error="timeout")
    line = tool_call_line(call, ShortIds(["tc-1"]), 200)
    assert f"crm.lookup({ARGUMENTS_REDACTED})" in line and "sha256" not in line


@pytest.mark.parametrize(("title", "summary", "expected"), [
    ("crm.lookup(patient=Jane Roe)", "crm.lookup(patient=Jane Roe) → 3 visits",
     (f"crm.lookup({ARGUMENTS_REDACTED})", f"crm.lookup({ARGUMENTS_REDACTED}) → 3 visits")),
    ("crm.lookup(patient=Jane Roe)", "another form of summary",
     (f"crm.lookup({ARGUMENTS_REDACTED})", "another form of summary")),
    (f"crm.lookup({ARGUMENTS_REDACTED})", f"crm.lookup({ARGUMENTS_REDACTED}) → 3 visits",  # idempotent
     (f"crm.lookup({ARGUMENTS_REDACTED})", f"crm.lookup({ARGUMENTS_REDACTED}) → 3 visits")),
    ("subagent report: triage", "the report", ("subagent report: triage", "the report")),  # names no arguments
    ("[redacted by retention]", "[redacted by retention]", ("[redacted by retention]", "[redacted by retention]")),
])
def test_a_memory_title_loses_the_calls_arguments(title: str, summary: str, expected: tuple[str, str]) -> None:
    assert redacted_title("crm.lookup", title, summary) == expected


@pytest.mark.parametrize(("status", "arguments", "has_result", "expected"), [
    ("succeeded", redacted_arguments({"q": "x"}), False, True),
    ("failed", redacted_arguments({"q": "x"}), False, True),
    ("succeeded", redacted_arguments({"q": "x"}), True, False),  # redacted or hash-only: the row stays
    ("succeeded", {"q": "x"}, False, False),  # not captured (yet): not retention's doing
    ("pending", redacted_arguments({"q": "x"}), False, False),
])
def test_a_deleted_result_is_told_apart_from_a_missing_one(status: str, arguments: dict, has_result: bool,
                                                          expected: bool) -> None:
    assert result_removed(status, arguments, has_result) is expected


@pytest.mark.parametrize(("reason", "expected"), [
    ("exact evidence requested (/patients/Jane Roe), up to 4096 bytes",
     f"exact evidence requested ({POINTER_REMOVED}), up to 4096 bytes"),
    ("recall of exact evidence (/patients/Jane Roe/0): 9 of at most 10 bytes",  # the longer pointer first
     f"recall of exact evidence ({POINTER_REMOVED}): 9 of at most 10 bytes"),
    ("no selected memory cites this artifact", "no selected memory cites this artifact"),
    (f"exact evidence requested ({POINTER_REMOVED}), up to 1 bytes",  # idempotent
     f"exact evidence requested ({POINTER_REMOVED}), up to 1 bytes"),
])
def test_a_removed_results_pointers_leave_the_reasons(reason: str, expected: str) -> None:
    assert scrubbed_reason(reason, ["/patients/Jane Roe", "/patients/Jane Roe/0", ""]) == expected


@pytest.mark.parametrize(("age", "due"), [
    (timedelta(0), False),
    (UNCLAIMED_OBJECT_GRACE - timedelta(seconds=1), False),
    (UNCLAIMED_OBJECT_GRACE, True),
    (UNCLAIMED_OBJECT_GRACE * 30, True),
])
def test_an_unclaimed_object_is_swept_only_after_the_grace_period(age: timedelta, due: bool) -> None:
    written = datetime(2026, 12, 1, tzinfo=UTC)
    assert unclaimed_object_due(written, written + age) is due


def test_a_forgotten_call_keeps_its_attempts_and_loses_every_text() -> None:
    from policy.retention import ERROR_REMOVED, forgotten_call

    history = [{"attempt": 1, "status": "retrying", "error": "no Jane"}, {"attempt": 2, "status": "running",
                                                                           "error": None}]
    arguments, last_error, entries = forgotten_call({"patient": "Jane"}, "no Jane", history)
    assert "Jane" not in repr((arguments, last_error, entries))
    assert last_error == ERROR_REMOVED and [e["error"] for e in entries] == [ERROR_REMOVED, None]
    assert [(e["attempt"], e["status"]) for e in entries] == [(1, "retrying"), (2, "running")]
    assert forgotten_call(arguments, last_error, entries) == (arguments, last_error, entries)  # idempotent


def test_a_forgotten_memory_of_a_failure_says_so_and_keeps_a_succeeded_results_text() -> None:
    from policy.retention import ERROR_REMOVED, forgotten_memory, redacted_subject

    failed = forgotten_memory("crm.get", "crm.get(id=Jane)", "crm.get(id=Jane) FAILED: PermissionError: Jane",
                              {"error": "PermissionError: Jane"}, 'crm.get:{"id":"Jane"}', failed=True)
    assert "Jane" not in failed.model_dump_json()
    assert failed.summary == f"crm.get({ARGUMENTS_REDACTED}) FAILED: {ERROR_REMOVED}"
    kept = forgotten_memory("crm.get", "crm.get(id=Jane)", "crm.get(id=Jane) → plan gold",
                            {"brief": "crm.get(id=Jane) → plan gold"}, 'crm.get:{"id":"Jane"}', failed=False)
    assert kept.summary.endswith("→ plan gold") and "Jane" not in kept.model_dump_json()
    assert kept.subject_key == redacted_subject("crm.get", 'crm.get:{"id":"Jane"}') == redacted_subject(
        "crm.get", kept.subject_key)
