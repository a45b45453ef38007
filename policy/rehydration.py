"""Rehydration: stage 8, and the byte reading both ways raw artifact bytes reach a model share.

8. **Rehydration, last**: :func:`plan_rehydration` plans exact evidence the
   boundary requested, cited by a selected memory, allowed raw on the route,
   within a per-item and a total byte budget; a withheld body becomes a line
   saying what to use instead.
The other way is stage 9's first reads, planned in :mod:`policy.native`: a
result the participant has not read yet reaches it whole, as the tool message
after its call, when its route may carry it raw and it fits the cap; it is cut
with :func:`bounded` from here.

Both only plan: the caller reads the planned bytes (``activities/context.py``
verifies them against their hash) and :func:`policy.render.render_context`
cuts them with :func:`slice_payload` and :func:`bounded`. Planned bytes that
could not be read (the object is gone, or fails its hash) are never replaced
silently: the model is told they are unavailable, and
:func:`unavailable_raw_decisions` rewrites their decisions so the record says
they were not shown (``raw_missing`` / ``raw_hash_mismatch``). A slice is exact:
rows of a CSV keep their header and original text, JSON pointers return the
value as canonical JSON, and anything cut for the byte budget says so.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Mapping, Sequence

from policy.payloads import decode_payload
from policy.enums import DecisionOutcome, OmissionReason
from policy.errors import DerivationError
from policy.gates import admit
from policy.lines import withheld_evidence_line
from policy.records import (
    Locator,
    PolicyDecisionRecord,
    RehydrationItem,
    canonical_json,
)
from policy.selection import Item, SelectionContext


def plan_rehydration(ctx: SelectionContext, kept: list[Item]) -> tuple[list[RehydrationItem], list[str]]:
    """Stage 8: raw evidence only for requested artifacts a selected memory cites and the route allows.

    Args:
        ctx: the pass (its boundary's evidence requests are served in order; its ledger gets a decision
            for every request).
        kept: the items the budget kept; only their memories' sources qualify.

    Returns:
        The planned slices, and a line for each body withheld on this route.
    """
    policy, boundary, candidates, viewer, short, ledger = (ctx.policy, ctx.boundary, ctx.candidates, ctx.viewer,
                                                           ctx.short, ctx.ledger)
    artifacts = {artifact.id: artifact for artifact in candidates.artifacts}
    memories = {memory.id: memory for memory in candidates.tool_memories}
    selected_sources: dict[str, str] = {}
    for item in kept:
        kind, _, record_id = item.ref.partition(":")
        if kind == "memory":
            for artifact_id in memories[record_id].source_artifact_ids:
                selected_sources.setdefault(artifact_id, record_id)
    remaining = policy.rehydration_total_bytes
    plan: list[RehydrationItem] = []
    notes: list[str] = []
    for request in boundary.evidence_requests:
        ref = f"artifact:{request.artifact_id}"
        artifact = artifacts.get(request.artifact_id)
        if artifact is None:
            ledger.decide("rehydration", ref, DecisionOutcome.DENIED, "artifact not in this conversation's graph")
            continue
        denial = admit(artifact, artifact.privacy, viewer)
        if denial:
            ledger.deny("rehydration", ref, denial)
            continue
        if artifact.id not in selected_sources:
            ledger.decide("rehydration", ref, DecisionOutcome.OMITTED,
                          "no selected memory cites this artifact", OmissionReason.RAW_NOT_REQUESTED)
            continue
        if artifact.privacy not in viewer.route.raw_allowed:
            ledger.decide("rehydration", ref, DecisionOutcome.DENIED,
                          f"raw {artifact.privacy.value} payloads not allowed on route {viewer.route.name}",
                          OmissionReason.RAW_PRIVACY)
            notes.append(withheld_evidence_line(artifact, memories[selected_sources[artifact.id]], short))
            continue
        size = min(policy.rehydration_item_bytes, remaining)
        if size <= 0:
            ledger.decide("rehydration", ref, DecisionOutcome.OMITTED,
                          "rehydration byte budget spent", OmissionReason.RAW_BYTE_BUDGET)
            continue
        estimate = artifact.result_bytes if request.locator is None else size
        remaining -= min(size, estimate)
        plan.append(RehydrationItem(artifact_id=artifact.id, locator=request.locator, max_bytes=size))
        ledger.decide("rehydration", ref, DecisionOutcome.REHYDRATED,
                      f"exact evidence requested ({describe(request.locator)}), up to {size} bytes")
    return plan, notes


RAW_MISSING_TEXT = "the stored object is missing"
"""Why planned bytes are unavailable: no object under the artifact's key."""
RAW_HASH_MISMATCH_TEXT = "the stored bytes failed their sha256 check"
"""Why planned bytes are unavailable: the object's bytes do not hash to what was captured."""


def unavailable_raw_decisions(
    decisions: Sequence[PolicyDecisionRecord],
    planned: Sequence[RehydrationItem],
    unavailable: Mapping[str, str],
) -> tuple[tuple[PolicyDecisionRecord, ...], Counter[str]]:
    """The decisions with every planned read that failed recorded as such, and the omissions to add.

    Selection decides before any byte is read, so a planned read is logged
    ``rehydrated``. When its bytes could not be read, the context carries what
    :func:`policy.render.render_context` puts there instead (the evidence line
    or the result's summary, each saying the raw bytes are unavailable and
    why), and the decision must say the same: requested evidence becomes
    ``omitted``; a first read stays ``included`` (its tool message is there)
    but as the summary, not raw. Both carry ``raw_hash_mismatch`` (the bytes
    failed their sha256 check) or ``raw_missing``.

    Args:
        decisions: the assembly's decisions, in order.
        planned: the selection's rehydration plan.
        unavailable: artifact id -> why its bytes could not be read
            (:data:`RAW_HASH_MISMATCH_TEXT`, :data:`RAW_MISSING_TEXT`).

    Returns:
        The decisions (same order) and the omission counts the record gains.
    """
    subjects: dict[tuple[str, str], tuple[str, bool]] = {}
    for item in planned:
        if item.artifact_id not in unavailable:
            continue
        if item.tool_call_id is not None:
            subjects[("appended", f"tool_call:{item.tool_call_id}")] = (item.artifact_id, True)
        else:
            subjects[("rehydration", f"artifact:{item.artifact_id}")] = (item.artifact_id, False)
    added: Counter[str] = Counter()
    out: list[PolicyDecisionRecord] = []
    for decision in decisions:
        found = subjects.get((decision.kind, decision.subject_ref))
        if found is None or decision.outcome is not DecisionOutcome.REHYDRATED:
            out.append(decision)
            continue
        artifact_id, first_read = found
        why = unavailable[artifact_id]
        omission = OmissionReason.RAW_HASH_MISMATCH if why == RAW_HASH_MISMATCH_TEXT else OmissionReason.RAW_MISSING
        if first_read:
            outcome = DecisionOutcome.INCLUDED
            reason = (f"own result as a native tool message (summary): planned whole, but {why} "
                      f"(artifact:{artifact_id}); the message says the raw bytes are unavailable")
        else:
            outcome = DecisionOutcome.OMITTED
            reason = (f"exact evidence planned, not shown: {why} (artifact:{artifact_id}); "
                      "the context says the raw evidence is unavailable")
        out.append(decision.model_copy(update={"outcome": outcome, "reason": reason, "omission": omission}))
        added[omission.value] += 1
    return tuple(out), added


def slice_payload(raw: bytes, locator: Locator | None) -> str:
    """The exact part of ``raw`` that ``locator`` addresses.

    Args:
        raw: the artifact's captured bytes.
        locator: what to take; ``None`` or ``kind="whole"`` takes everything.

    Raises:
        DerivationError: the locator does not fit the payload (rows past the
            end, a pointer to a missing key, JSON that does not parse).
    """
    text = decode_payload(raw)
    if locator is None or locator.kind == "whole":
        return text
    if locator.kind in ("rows", "lines"):
        if locator.kind == "rows":
            records = _csv_records(text)
            header = [line for _, line in records[:1]]
            body = [line for row, line in records[1:] if row]
        else:
            header, body = [], text.splitlines()
        # 0 is a bad index, not "unset": only None takes the default.
        start = 1 if locator.start is None else locator.start
        end = len(body) if locator.end is None else locator.end
        if start < 1 or end < start or start > len(body):
            raise DerivationError(f"{locator.kind} {start}-{end} outside payload of {len(body)} {locator.kind}")
        return "\n".join(header + body[start - 1 : end])
    if locator.kind == "json_pointer":
        return canonical_json(_resolve_pointer(text, locator.pointer or ""))
    raise DerivationError(f"unknown locator kind {locator.kind!r}")


def _csv_records(text: str) -> list[tuple[list[str], str]]:
    """Each CSV record with its original text; a quoted field may span lines.

    Numbered like the deriver counts rows: blank records are not data rows.
    """
    lines = io.StringIO(text, newline="").readlines()
    reader = csv.reader(lines)
    records: list[tuple[list[str], str]] = []
    start = 0
    try:
        for row in reader:
            records.append((row, "".join(lines[start : reader.line_num]).rstrip("\r\n")))
            start = reader.line_num
    except csv.Error as exc:
        raise DerivationError(f"payload is not CSV: {exc}") from exc
    return records


def _resolve_pointer(text: str, pointer: str) -> object:
    try:
        node: object = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DerivationError(f"payload is not JSON: {exc}") from exc
    if pointer in ("", "/"):
        return node
    for token in pointer.lstrip("/").split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        elif isinstance(node, dict) and token in node:
            node = node[token]
        else:
            raise DerivationError(f"JSON pointer {pointer!r} does not resolve")
    return node


def bounded(text: str, max_bytes: int) -> str:
    """``text`` cut to at most ``max_bytes`` UTF-8 bytes, with an explicit marker."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    kept = data[:max_bytes].decode("utf-8", errors="ignore")
    return f"{kept}\n[truncated: {max_bytes} of {len(data)} bytes shown]"


def describe(locator: Locator | None) -> str:
    """A short human form of a locator (``rows 3-5``, ``/items/0``, ``whole``)."""
    if locator is None or locator.kind == "whole":
        return "whole"
    if locator.kind == "json_pointer":
        return locator.pointer or "/"
    return f"{locator.kind} {locator.start}-{locator.end}"
