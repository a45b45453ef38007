"""Raw evidence: exact slices, byte bounds, and which requests the assembler honours."""

from __future__ import annotations

import pytest

from policy.assembler import render_context, select_context
from policy.enums import DecisionOutcome, OmissionReason
from policy.errors import DerivationError
from policy.policy import DEFAULT_POLICY, ContextPolicy
from policy.records import Locator
from policy.rehydration import bounded, describe, slice_payload
from policy_builders import (
    SIBLING,
    artifact,
    boundary,
    candidates,
    decisions_for,
    evidence,
    memory,
    omission_of,
    outcome_of,
    system_text,
)

CSV = b"region,amount\nnorth,10\nsouth,20\neast,30\nwest,40\n"
TEXT = b"alpha\nbeta\ngamma\ndelta"
JSON = b'{"items":[{"name":"alpha","n":1},{"name":"beta","n":2}],"a/b":"slash","m~n":"tilde","":"empty"}'


def loc(kind: str, start: int | None = None, end: int | None = None, pointer: str | None = None) -> Locator:
    return Locator(artifact_id="art", kind=kind, start=start, end=end, pointer=pointer)


SLICE_TABLE = [
    # (case, raw, locator, expected text)
    ("whole (no locator)", TEXT, None, "alpha\nbeta\ngamma\ndelta"),
    ("whole (kind)", TEXT, loc("whole"), "alpha\nbeta\ngamma\ndelta"),
    ("rows keep the header", CSV, loc("rows", 2, 3), "region,amount\nsouth,20\neast,30"),
    ("first row", CSV, loc("rows", 1, 1), "region,amount\nnorth,10"),
    ("last row", CSV, loc("rows", 4, 4), "region,amount\nwest,40"),
    ("rows open end", CSV, loc("rows", 3), "region,amount\neast,30\nwest,40"),
    ("rows end past the last row", CSV, loc("rows", 4, 99), "region,amount\nwest,40"),
    ("rows with CRLF", b"h\r\nr1\r\nr2\r\n", loc("rows", 2, 2), "h\nr2"),
    ("rows with a quoted newline",
     b'id,note\n1,"two\nlines"\n2,plain\n', loc("rows", 2, 2), "id,note\n2,plain"),
    ("rows spanning a quoted newline",
     b'id,note\n1,"two\nlines"\n2,plain\n', loc("rows", 1, 1), 'id,note\n1,"two\nlines"'),
    ("blank lines are not rows", b"h\n\nr1\n\nr2\n", loc("rows", 2, 2), "h\nr2"),
    ("rows with CR line endings", b"h\rr1\rr2", loc("rows", 2, 2), "h\nr2"),
    ("lines have no header", TEXT, loc("lines", 2, 3), "beta\ngamma"),
    ("lines count physical lines", b'id,note\n1,"two\nlines"\n', loc("lines", 3, 3), 'lines"'),
    ("single line", TEXT, loc("lines", 4, 4), "delta"),
    ("json pointer to a scalar", JSON, loc("json_pointer", pointer="/items/1/name"), '"beta"'),
    ("json pointer to an object", JSON, loc("json_pointer", pointer="/items/0"), '{"n":1,"name":"alpha"}'),
    ("json pointer to a number", JSON, loc("json_pointer", pointer="/items/1/n"), "2"),
    ("json pointer ~1 escape", JSON, loc("json_pointer", pointer="/a~1b"), '"slash"'),
    ("json pointer ~0 escape", JSON, loc("json_pointer", pointer="/m~0n"), '"tilde"'),
    ("json pointer to the root", b'{"b":1,"a":2}', loc("json_pointer", pointer=""), '{"a":2,"b":1}'),
    ("undecodable bytes become U+FFFD", b"ok \xff", None, "ok \ufffd"),
]


@pytest.mark.parametrize(("raw", "locator", "expected"), [r[1:] for r in SLICE_TABLE], ids=[r[0] for r in SLICE_TABLE])
def test_slice_payload(raw, locator, expected):
    assert slice_payload(raw, locator) == expected


SLICE_ERRORS = [
    ("rows start past the end", CSV, loc("rows", 5, 6)),
    ("rows end before start", CSV, loc("rows", 3, 2)),
    ("rows start zero", CSV, loc("rows", 0, 2)),
    ("rows end zero", CSV, loc("rows", 1, 0)),
    ("rows of a header-only csv", b"a,b\n", loc("rows", 1, 1)),
    ("lines negative start", TEXT, loc("lines", -1, 2)),
    ("pointer to a missing key", JSON, loc("json_pointer", pointer="/nope")),
    ("pointer past a list", JSON, loc("json_pointer", pointer="/items/2")),
    ("pointer into a scalar", JSON, loc("json_pointer", pointer="/items/0/name/x")),
    ("pointer into non-JSON", TEXT, loc("json_pointer", pointer="/a")),
]


@pytest.mark.parametrize(("raw", "locator"), [r[1:] for r in SLICE_ERRORS], ids=[r[0] for r in SLICE_ERRORS])
def test_slice_payload_errors(raw, locator):
    with pytest.raises(DerivationError):
        slice_payload(raw, locator)


@pytest.mark.parametrize(
    ("text", "max_bytes", "expected"),
    [
        ("abcdef", 6, "abcdef"),
        ("abcdef", 10, "abcdef"),
        ("abcdef", 4, "abcd\n[truncated: 4 of 6 bytes shown]"),
        ("abcdef", 0, "\n[truncated: 0 of 6 bytes shown]"),
        # "é" is two bytes: a cut inside it drops the partial character, never emits a broken one.
        ("aéb", 2, "a\n[truncated: 2 of 4 bytes shown]"),
        ("aéb", 3, "aé\n[truncated: 3 of 4 bytes shown]"),
    ],
)
def test_bounded(text, max_bytes, expected):
    assert bounded(text, max_bytes) == expected


@pytest.mark.parametrize(
    ("locator", "expected"),
    [
        (None, "whole"),
        (loc("whole"), "whole"),
        (loc("rows", 2, 3), "rows 2-3"),
        (loc("lines", 1, 1), "lines 1-1"),
        (loc("json_pointer", pointer="/a/0"), "/a/0"),
        (loc("json_pointer"), "/"),
    ],
)
def test_describe(locator, expected):
    assert describe(locator) == expected


# --------------------------------------------------------------------------- through the assembler


def _world(*extra_artifacts, memories=None):
    arts = [artifact("art-csv", 20, CSV, content_type="text/csv"), artifact("art-txt", 21, TEXT),
            *extra_artifacts]
    if memories is None:
        memories = [memory(f"mem-{a.id}", a.seq + 100, sources=[a.id]) for a in arts]
    return candidates(artifacts=arts, tool_memories=memories)


RAW = {"art-csv": CSV, "art-txt": TEXT}


def test_rehydrated_rows_are_exact_and_cited(run):
    result = run(_world(), boundary(evidence_requests=(evidence("art-csv", "rows", 2, 3),)), raw=RAW)
    text = system_text(result)
    assert (
        "Raw evidence (exact, rehydrated):\n- [a:artcsv] rows 2-3:\n```\nregion,amount\nsouth,20\neast,30\n```"
    ) in text
    assert "north,10" not in text and "west,40" not in text
    assert outcome_of(result, "artifact:art-csv") is DecisionOutcome.REHYDRATED
    assert result.record.rehydrated_refs == ("artifact:art-csv#rows=2-3",)


def test_item_byte_bound_truncates_with_an_explicit_marker(run):
    policy = ContextPolicy(rehydration_item_bytes=16)
    result = run(_world(), boundary(evidence_requests=(evidence("art-csv"),)), policy=policy, raw=RAW)
    text = system_text(result)
    assert "```\nregion,amount\nno\n[truncated: 16 of 48 bytes shown]\n```" in text
    assert "up to 16 bytes" in decisions_for(result, "artifact:art-csv")[0].reason


def test_unknown_artifact_is_denied_and_never_invented(run):
    result = run(_world(), boundary(evidence_requests=(evidence("art-ghost"),)), raw=RAW)
    [decision] = decisions_for(result, "artifact:art-ghost")
    assert decision.outcome is DecisionOutcome.DENIED
    assert decision.omission is None
    assert "Raw evidence" not in system_text(result)
    assert result.record.rehydrated_refs == ()


def test_artifact_without_a_selected_memory_is_not_rehydrated(run):
    orphan = artifact("art-orphan", 22, b"orphan bytes")
    superseded = artifact("art-old", 23, b"old bytes")
    world = _world(orphan, superseded, memories=[
        memory("mem-old", 30, sources=["art-old"], superseded_by="mem-new"),
        memory("mem-new", 31, sources=["art-txt"]),
    ])
    requests = (evidence("art-orphan"), evidence("art-old"), evidence("art-txt"))
    result = run(world, boundary(evidence_requests=requests),
                 raw={"art-orphan": b"orphan bytes", "art-old": b"old bytes", **RAW})
    for ref in ("artifact:art-orphan", "artifact:art-old"):
        assert omission_of(result, ref) is OmissionReason.RAW_NOT_REQUESTED
        assert "no selected memory cites this artifact" in decisions_for(result, ref)[0].reason
    assert outcome_of(result, "artifact:art-txt") is DecisionOutcome.REHYDRATED
    text = system_text(result)
    assert "orphan bytes" not in text and "old bytes" not in text and "gamma" in text


def test_artifact_whose_memory_lost_the_budget_is_not_rehydrated(run):
    result = run(_world(), boundary(token_budget=1, evidence_requests=(evidence("art-csv"),)), raw=RAW)
    assert omission_of(result, "memory:mem-art-csv") is OmissionReason.BUDGET
    assert omission_of(result, "artifact:art-csv") is OmissionReason.RAW_NOT_REQUESTED


def test_artifact_outside_lineage_is_denied(run):
    sib = artifact("art-sib", 12, b"sibling bytes", branch=SIBLING)
    world = _world(sib, memories=[memory("mem-sib", 13, sources=["art-sib"], branch=SIBLING)])
    result = run(world, boundary(evidence_requests=(evidence("art-sib"),)), raw={"art-sib": b"sibling bytes"})
    assert omission_of(result, "artifact:art-sib") is OmissionReason.OUTSIDE_LINEAGE
    assert "sibling bytes" not in system_text(result)


def test_total_byte_budget_is_shared_across_requests(run):
    extra = [artifact(f"art-{i}", 30 + i, b"0123456789" * 10) for i in range(3)]
    policy = ContextPolicy(rehydration_item_bytes=60, rehydration_total_bytes=100)
    requests = tuple(evidence(a.id, "lines", 1, 1) for a in extra)
    result = run(_world(*extra), boundary(evidence_requests=requests), policy=policy,
                 raw={a.id: b"0123456789" * 10 for a in extra})
    assert [outcome_of(result, f"artifact:art-{i}") for i in range(3)] == [
        DecisionOutcome.REHYDRATED, DecisionOutcome.REHYDRATED, DecisionOutcome.OMITTED,
    ]
    assert "up to 60 bytes" in decisions_for(result, "artifact:art-0")[0].reason
    assert "up to 40 bytes" in decisions_for(result, "artifact:art-1")[0].reason
    assert omission_of(result, "artifact:art-2") is OmissionReason.RAW_BYTE_BUDGET
    assert result.record.omitted_counts[OmissionReason.RAW_BYTE_BUDGET.value] == 1


def test_whole_requests_spend_only_their_size(run):
    extra = [artifact(f"art-{i}", 30 + i, b"x" * 30) for i in range(3)]
    policy = ContextPolicy(rehydration_item_bytes=60, rehydration_total_bytes=100)
    result = run(_world(*extra), boundary(evidence_requests=tuple(evidence(a.id) for a in extra)),
                 policy=policy, raw={a.id: b"x" * 30 for a in extra})
    assert all(outcome_of(result, f"artifact:art-{i}") is DecisionOutcome.REHYDRATED for i in range(3))


def test_unrequested_raw_is_counted_not_sent(run):
    result = run(_world(), raw=RAW)
    assert result.record.omitted_counts[OmissionReason.RAW_NOT_REQUESTED.value] == 2
    assert "north,10" not in system_text(result)


def test_planned_rehydration_without_bytes_raises(counter):
    selection = select_context(DEFAULT_POLICY, boundary(evidence_requests=(evidence("art-csv"),)), _world(), counter)
    assert [item.artifact_id for item in selection.rehydration] == ["art-csv"]
    with pytest.raises(DerivationError, match="art-csv"):
        render_context(selection, {}, counter)


def test_assemble_without_payloads_raises_when_rehydration_is_planned(run):
    with pytest.raises(DerivationError):
        run(_world(), boundary(evidence_requests=(evidence("art-csv"),)))


def test_locator_that_does_not_fit_raises_at_render(run):
    with pytest.raises(DerivationError):
        run(_world(), boundary(evidence_requests=(evidence("art-csv", "rows", 9, 9),)), raw=RAW)
