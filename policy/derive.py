"""Derive compact tool memories from raw artifacts, deterministically.

A derived memory keeps what a later model call needs to *use* a result
(counts, totals, identifiers, the error that must be fixed, the handle of a
generated file) and a locator back to the exact raw bytes for anything else.
Derivation never invents: every value in a summary is copied from the payload.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from pydantic import Field

from policy.enums import FreshnessClass, ToolCallStatus
from policy.errors import DerivationError
from policy.payloads import decode_payload, parse_structured
from policy.records import (
    FAILED_SEPARATOR,
    RESULT_SEPARATOR,
    ArtifactRecord,
    Locator,
    Record,
    ToolMemoryRecord,
    bounded_key,
    canonical_json,
)
from policy.summarise import (
    BRIEF_KEY,
    FIELD_SEPARATOR,
    HEADER_CLOSE,
    HEADER_OPEN,
    is_free_text,
    json_summary,
    scalar,
    summary_budget,
    text_brief,
    text_summary,
)
from policy.resources import resource_keys
from policy.tools import ResultKind, ToolSpec

FILE_CONTENT_TYPE = "application/vnd.dossier.file+json"
"""Content type of a generated-file handle ``{"name", "bytes", "sha256", "uri"}``."""

# Summary shapes. The scripted model (activities/providers/scripted/lines.py, and
# scripts/readings.py for the CSV summary) parses them back with patterns built from
# these; the subagent ones are what activities/promotion.py writes when it promotes a
# child's results. A JSON result's summary punctuation is policy.summarise's.
UNPARSED_SEPARATOR = ": unparsed "
"""``<title>: unparsed <kind> result, <n> bytes``: a result that did not parse as its kind."""
FILE_HANDLE_PREFIX = "generated file "
"""``generated file <name>, <n> bytes at <uri>``: a generated file's handle."""
SUBAGENT_REPORT_PREFIX = "subagent "
"""``subagent <name> <outcome>; report: <text>``: a finished subagent's promoted report."""
SUBAGENT_REPORT_SEPARATOR = "; report: "
SUBAGENT_OUTCOMES = ("succeeded", "failed", "timed out")
"""How a report summary spells a subagent run's outcome (``timed_out`` with a space)."""
PROMOTED_PREFIX = "from subagent "
"""``from subagent <name>: <summary>``: a file handle or failure promoted from a subagent."""
PROMOTED_SEPARATOR = ": "
CSV_ROWS = " rows × "
"""``<n> rows × <m> cols [<names>]; <column> sum <total>``: a CSV summary's shape, then
up to three sums, all joined by :data:`~policy.summarise.FIELD_SEPARATOR`."""
CSV_COLUMNS = " cols"
"""Follows a CSV summary's column count; the names follow in a header
(:data:`~policy.summarise.HEADER_OPEN` ... :data:`~policy.summarise.HEADER_CLOSE`)."""
CSV_NAME_SEPARATOR = ","
"""Joins the column names of a CSV summary's header."""
CSV_SUM = " sum "
"""``<column> sum <total>``: the exact total of a numeric CSV column."""
TITLE_VALUE_CHARS = 40
"""Each argument value in a title is clipped to this many characters."""
TITLE_ARGS_CHARS = 100
"""A title's whole argument list is clipped to this many characters."""


class MemoryDraft(Record):
    """A tool memory before it is written to the graph."""

    subject_key: str
    resources: tuple[str, ...] = ()
    title: str
    summary: str
    payload: dict[str, Any] = Field(default_factory=dict)
    confidence: float
    confidence_source: str
    rationale: str
    limitations: str = ""
    freshness: FreshnessClass
    stale_after: datetime | None
    revalidate_with: tuple[str, ...]
    locators: tuple[Locator, ...]


def subject_key(spec: ToolSpec, arguments: dict[str, Any]) -> str:
    """Tool name plus the identifying arguments, canonically; a long one bounded by a digest (it is indexed)."""
    keys = spec.key_args if spec.key_args is not None else tuple(sorted(arguments))
    return bounded_key(f"{spec.name}:{canonical_json({k: arguments.get(k) for k in keys})}")


PARSE_MAX_BYTES = 8 * 1024 * 1024
"""Results above this size are not parsed for a summary (a 50 MB JSON dump
would cost seconds and gigabytes of parse tree for a one-line summary); their
memory says what they are and where they are, and points at the raw bytes."""


def derive_memory(
    spec: ToolSpec,
    artifact_id: str,
    arguments: dict[str, Any],
    status: ToolCallStatus,
    raw: bytes,
    *,
    content_type: str,
    observed_at: datetime,
    parse_max_bytes: int = PARSE_MAX_BYTES,
) -> MemoryDraft:
    """Derive the model-facing memory of one captured artifact.

    Args:
        spec: the tool's spec (freshness, revalidation, result kind).
        artifact_id: the artifact the memory cites.
        arguments: the call's raw arguments.
        status: how the call ended.
        raw: the captured result bytes (the error text for a failed call).
        content_type: the captured content type.
        observed_at: when the result was captured.
        parse_max_bytes: larger results get a metadata-only memory.

    Returns:
        The draft. A payload that does not parse as its declared kind yields a
        low-confidence text memory rather than an error: nothing is lost, the
        raw bytes stay in the artifact.
    """
    title = f"{spec.name}({_compact_args(arguments)})"
    whole = (Locator(artifact_id=artifact_id),)
    if status is ToolCallStatus.FAILED:
        summary, payload = _error_summary(decode_payload(raw))
        return _draft(spec, arguments, observed_at, title=title, summary=f"{title}{FAILED_SEPARATOR}{summary}",
                      payload=payload, confidence=1.0, source="captured error", locators=whole,
                      freshness=FreshnessClass.VOLATILE)
    kind = _kind(spec.result_kind, content_type, raw)
    if len(raw) > parse_max_bytes:
        first = text_brief(decode_payload(raw[:2048]).splitlines()[0] if raw[:2048].strip() else "")
        head = f"; starts: {first[:120]}" if first and kind == "text" else ""
        summary = f"{title}{RESULT_SEPARATOR}large {kind} result, {len(raw)} bytes{head}"
        return _draft(spec, arguments, observed_at, title=title, summary=summary, payload={"bytes": len(raw)},
                      confidence=0.5, source="size limit", locators=whole,
                      limitations=f"not summarised: {len(raw)} bytes is above the {parse_max_bytes}-byte parse "
                                  "limit; request exact evidence by locator")
    text = decode_payload(raw)
    try:
        if kind == "file":
            summary, payload = _file_summary(text)
            return _draft(spec, arguments, observed_at, title=title, summary=summary, payload=payload,
                          confidence=1.0, source="file handle", locators=whole, freshness=FreshnessClass.PERMANENT)
        if kind == "csv":
            summary, payload, locators = _csv_summary(text, artifact_id)
        elif kind in ("json", "search"):
            data, source = parse_structured(text, spec.result_kind == "auto")
            summary, payload = json_summary(data, spec.summary_fields, spec.summary_chars or summary_budget(len(text)), arguments), _json_payload(data)
            locators = whole
            kind = "search" if kind == "search" else source
        else:
            summary, payload = _text_summaries(text, spec, title)
            locators = whole
    # RecursionError: json.loads raises it for pathologically nested input.
    except (ValueError, csv.Error, DerivationError, RecursionError) as exc:
        return _draft(spec, arguments, observed_at, title=title,
                      summary=f"{title}{UNPARSED_SEPARATOR}{kind} result, {len(raw)} bytes", payload={},
                      confidence=0.3, source="parse failure", locators=whole,
                      limitations=f"could not parse as {kind}: {exc}")
    return _draft(spec, arguments, observed_at, title=title, summary=f"{title}{RESULT_SEPARATOR}{summary}",
                  payload=payload, confidence=0.95, source=f"{kind} deriver", locators=locators)


def _text_summaries(text: str, spec: ToolSpec, title: str) -> tuple[str, dict[str, Any]]:
    """A text result's detailed summary, and its payload: the brief one when that is shorter."""
    detail = text_summary(text, spec.summary_chars or summary_budget(len(text)))
    brief = text_brief(text)
    return detail, ({BRIEF_KEY: f"{title}{RESULT_SEPARATOR}{brief}"} if brief != detail else {})


def _draft(
    spec: ToolSpec,
    arguments: dict[str, Any],
    observed_at: datetime,
    *,
    title: str,
    summary: str,
    payload: dict[str, Any],
    confidence: float,
    source: str,
    locators: tuple[Locator, ...],
    freshness: FreshnessClass | None = None,
    limitations: str = "",
) -> MemoryDraft:
    """A draft for ``spec``'s result; ``source`` names the deriver, ``freshness`` defaults to the spec's."""
    stale_after = observed_at + spec.ttl if spec.ttl is not None else None
    return MemoryDraft(
        subject_key=subject_key(spec, arguments),
        resources=resource_keys(spec, arguments),
        title=title,
        summary=summary,
        payload=payload,
        confidence=confidence,
        confidence_source=source,
        rationale=f"derived from the raw {spec.name} result by the {source}",
        limitations=limitations,
        freshness=freshness or spec.freshness,
        stale_after=stale_after,
        revalidate_with=spec.revalidate_with or (spec.name,),
        locators=tuple(locators),
    )


def title_value(value: Any) -> str:
    """An argument value as a memory title shows it: whitespace folded, clipped to :data:`TITLE_VALUE_CHARS`."""
    text = " ".join((value if isinstance(value, str) else canonical_json(value)).split())
    return text if len(text) <= TITLE_VALUE_CHARS else text[: TITLE_VALUE_CHARS - 1] + "…"


def _compact_args(arguments: dict[str, Any]) -> str:
    """Arguments as a title shows them; the full ones stay on the tool call."""
    text = ", ".join(f"{key}={title_value(value)}" for key, value in sorted(arguments.items()))
    return text if len(text) <= TITLE_ARGS_CHARS else text[: TITLE_ARGS_CHARS - 1] + "…"


def _kind(declared: ResultKind, content_type: str, raw: bytes) -> ResultKind:
    if declared != "auto":
        return declared
    if content_type == FILE_CONTENT_TYPE:
        return "file"
    if "csv" in content_type:
        return "csv"
    stripped = raw.lstrip()
    if "json" in content_type or stripped[:1] in (b"{", b"[") or stripped.startswith(b"array("):
        return "json"  # JSON, or a Python literal (parse_structured)
    return "text"


def _error_summary(text: str) -> tuple[str, dict[str, Any]]:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return "no error text", {}
    last = lines[-1]
    return last, {"error": last, "lines": len(lines)}


def _file_summary(text: str) -> tuple[str, dict[str, Any]]:
    handle = json.loads(text)
    if not isinstance(handle, dict) or "name" not in handle:
        raise DerivationError("a file handle needs at least a name")
    # The digest stays in the payload: it identifies bytes, the model needs name, size and place.
    size = f", {handle['bytes']} bytes" if "bytes" in handle else ""
    uri = f" at {handle['uri']}" if "uri" in handle else ""
    return f"{FILE_HANDLE_PREFIX}{handle['name']}{size}{uri}", {"file": handle}


def _number(text: str) -> Decimal | None:
    try:
        value = Decimal(text.replace(",", "")) if text.strip() else None
    except InvalidOperation:
        return None
    # "NaN" and "Infinity" parse, but cannot be summed or compared as data.
    return value if value is not None and value.is_finite() else None


def _csv_summary(text: str, artifact_id: str) -> tuple[str, dict[str, Any], tuple[Locator, ...]]:
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        raise ValueError("empty CSV")
    header, body = rows[0], [row for row in rows[1:] if row]
    stats: list[str] = []
    totals: dict[str, str] = {}
    ranges: dict[str, list[str]] = {}
    for index, column in enumerate(header):
        values = [_number(row[index]) for row in body if index < len(row)]
        if body and values and all(v is not None for v in values):
            total = sum(values)
            totals[column] = str(total)
            ranges[column] = [str(min(values)), str(max(values))]
            if len(stats) < 3:
                stats.append(f"{column}{CSV_SUM}{total}")
    names = CSV_NAME_SEPARATOR.join(header)
    shape = f"{len(body)}{CSV_ROWS}{len(header)}{CSV_COLUMNS}{HEADER_OPEN}{names}{HEADER_CLOSE}"
    summary = FIELD_SEPARATOR.join([shape, *stats])
    payload = {"rows": len(body), "columns": header, "sums": totals, "ranges": ranges}
    return summary, payload, (Locator(artifact_id=artifact_id, kind="rows", start=1, end=max(len(body), 1)),)


def _json_payload(data: Any) -> dict[str, Any]:
    """Structured payload of a JSON result: list counts and the record's facts.

    Facts (``entity.attribute`` -> value) are what contradiction detection
    compares across memories; free text is no fact.
    """
    if isinstance(data, list):
        return {"count": len(data)}
    if not isinstance(data, dict):
        return {}
    entity = _entity(data)
    if not entity:
        return {}
    facts = {
        f"{entity}.{key}": scalar(value)
        for key, value in sorted(data.items())
        if value is not None and not isinstance(value, (list, dict)) and not is_free_text(value, key)
    }
    return {"facts": facts} if facts else {}


def _entity(record: dict[str, Any]) -> str | None:
    # The record's own ``id`` first: ``customer_id`` names another entity it points to.
    for key in ["id", *sorted(k for k in record if k.endswith("_id"))]:
        if isinstance(record.get(key), (str, int)):
            return str(record[key])
    return None


def memory_record(
    draft: MemoryDraft,
    artifact: ArtifactRecord,
    *,
    memory_id: str,
    supersedes: tuple[str, ...] = (),
    conflicts_with: tuple[str, ...] = (),
) -> ToolMemoryRecord:
    """The memory a draft becomes: owned, scoped and classed like the artifact it was derived from.

    The one place a draft turns into a record, for live turns, imported
    trajectories and tests alike.

    Args:
        draft: what :func:`derive_memory` drafted from the artifact's bytes.
        artifact: the captured artifact the memory cites.
        memory_id: the memory's id (derived from the artifact id by the caller, so a
            retried derivation writes nothing new).
        supersedes: live memories of the same subject this one replaces.
        conflicts_with: live memories this one contradicts.

    Returns:
        The record, ``seq`` unset (the store assigns it).
    """
    return ToolMemoryRecord(
        id=memory_id,
        branch_id=artifact.branch_id,
        seq=0,
        owner_participant_id=artifact.owner_participant_id,
        model_run_id=artifact.model_run_id,
        runtime_kind=artifact.runtime_kind,
        source_artifact_ids=(artifact.id,),
        source_tool=artifact.tool_name,
        visibility=artifact.visibility,
        shared_with=artifact.shared_with,
        privacy=artifact.privacy,
        observed_at=artifact.captured_at,
        promotion=artifact.promotion,
        supersedes=supersedes,
        conflicts_with=conflicts_with,
        **{name: getattr(draft, name) for name in MemoryDraft.model_fields},
    )
