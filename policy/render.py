"""How admitted records read to a model: compact lines that keep their ids.

Ids are shortened for the model (``m:3f2a91c0``) but never invented: a short
id is a prefix of the real id, lengthened until it is unique within the
assembly, and the assembly record keeps the full ids.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime

from policy.enums import ResolutionStatus, ToolCallStatus
from policy.records import (
    CheckpointRecord,
    SkillStateRecord,
    ToolCallRecord,
    ToolMemoryRecord,
    UserMemoryRecord,
    canonical_json,
)

_PREFIX_LENGTHS = (8, 12, 16)


class ShortIds:
    """Deterministic, collision-free short forms of the ids in one assembly."""

    def __init__(self, ids: Iterable[str]) -> None:
        """Build the shortest unique prefix (of 8, 12, 16 or all chars) for each id.

        Args:
            ids: every id that may be rendered in the assembly.
        """
        compact = {full: full.replace("-", "") for full in sorted(set(ids))}
        self._short: dict[str, str] = {}
        for length in _PREFIX_LENGTHS:
            owners: dict[str, list[str]] = {}
            for full, plain in compact.items():
                if full not in self._short:
                    owners.setdefault(plain[:length], []).append(full)
            for prefix, fulls in owners.items():
                if len(fulls) == 1:
                    self._short[fulls[0]] = prefix
        for full, plain in compact.items():
            self._short.setdefault(full, plain)

    def __call__(self, full_id: str) -> str:
        """The short form of ``full_id`` (the id itself if it was never registered)."""
        return self._short.get(full_id, full_id.replace("-", ""))


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _args(arguments: dict, limit: int = 160) -> str:
    return _clip(canonical_json(arguments), limit)


def _when(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%MZ")


def tool_call_line(call: ToolCallRecord, short: ShortIds, max_error_chars: int) -> str:
    """An unresolved or failed tool call, with what it waits for or why it failed."""
    head = f"[t:{short(call.id)}] {call.name}({_args(call.arguments)}) {call.status.value.upper()}"
    if call.status is ToolCallStatus.DEFERRED:
        return f"{head}: waiting for {call.waiting_for or 'an external answer'}"
    if call.status in (ToolCallStatus.FAILED, ToolCallStatus.RETRYING) or call.last_error:
        critical = ", retry-critical" if call.retry_critical else ""
        error = error_excerpt(call.last_error or "no error text captured", max_error_chars)
        return f"{head} after {call.attempts} attempt(s){critical}: {error}"
    return head


def error_excerpt(error: str, max_chars: int) -> str:
    """The lines of an error that say what went wrong, verbatim, within ``max_chars``.

    Errors put their headline first and their cause last (a traceback ends in
    the exception; a CLI ends in its final message); the frames in between are
    what can go. The last line is kept whole even past ``max_chars``: it is
    the one a fix is written against.
    """
    lines = [line.strip() for line in error.strip().splitlines() if line.strip()]
    if len(lines) <= 1 or len("\n".join(lines)) <= max_chars:
        return " | ".join(lines) if lines else ""
    tail = [lines[-1]]
    used = len(lines[-1])
    for line in reversed(lines[1:-1]):
        if used + len(line) + 3 > max_chars:
            break
        tail.insert(0, line)
        used += len(line) + 3
    head = lines[0] if used + len(lines[0]) + 3 <= max_chars or len(lines[0]) <= 120 else lines[0][:119] + "…"
    skipped = len(lines) - 1 - len(tail)
    gap = [f"[{skipped} line(s) omitted]"] if skipped else []
    return " | ".join([head, *gap, *tail])


def receipt_line(call: ToolCallRecord, short: ShortIds) -> str:
    """A succeeded call that no memory covers: that it ran, and with what."""
    return f"[t:{short(call.id)}] {call.name}({_args(call.arguments)}) ok"


def memory_line(memory: ToolMemoryRecord, short: ShortIds, conflicts: Iterable[str] = ()) -> str:
    """A current tool memory: summary, and only the caveats that change its reading."""
    parts = [f"[m:{short(memory.id)}] {memory.summary}"]
    if memory.resolution is ResolutionStatus.MISSING_SOURCE:
        missing = ",".join(f"a:{short(a)}" for a in memory.source_artifact_ids)
        parts.append(f"(UNVERIFIED: source artifact {missing} missing)")
    elif memory.resolution is ResolutionStatus.HASH_MISMATCH:
        parts.append("(UNVERIFIED: source artifact failed its integrity check)")
    if memory.confidence < 0.8:
        note = f"; {memory.limitations}" if memory.limitations else ""
        parts.append(f"(confidence {memory.confidence:.2f}{note})")
    others = sorted(conflicts)
    if others:
        parts.append("CONFLICTS with " + ", ".join(f"m:{short(o)}" for o in others))
    return " ".join(parts)


def stale_marker_line(memory: ToolMemoryRecord, short: ShortIds, stale_since: datetime | None) -> str:
    """A stale memory: what it was about and how to refresh it, never its values."""
    since = f" since {_when(stale_since)}" if stale_since else ""
    tools = ", ".join(memory.revalidate_with) or memory.source_tool
    return f"[m:{short(memory.id)}] STALE{since}: {memory.title} (observed {_when(memory.observed_at)}); re-run {tools}"


def checkpoint_line(checkpoint: CheckpointRecord, short: ShortIds) -> str:
    """A continuation checkpoint: its kind, compact state and the records it relies on."""
    refs = " ".join(short(ref) for ref in checkpoint.references)
    tail = f" refs {refs}" if refs else ""
    return f"[c:{short(checkpoint.id)}] {checkpoint.kind}: {canonical_json(checkpoint.state)}{tail}"


def skill_line(skill: SkillStateRecord, short: ShortIds) -> str:
    """An active skill's state."""
    return f"[s:{short(skill.id)}] {skill.skill}: {canonical_json(skill.state)}"


def user_memory_line(memory: UserMemoryRecord) -> str:
    """One personalisation fact."""
    return memory.text


FIRST_READ_LABEL = "whole result (first read)"
"""Marks a memory whose unread result is shown whole instead of its summary."""


def fenced(text: str) -> str:
    """``text`` in a code fence longer than any backtick run inside it.

    Raw tool output is untrusted: a result containing a fence of its own
    could otherwise close the block and pose as context structure.
    """
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"


SECTION_TITLES: dict[str, str] = {
    "recovery": "Open tool calls (unresolved; do not assume success):",
    "planning": "Continuation state:",
    "memory": "Tool results (compact; ids cite the runtime graph):",
    "stale": "Stale (not current truth; revalidate before use):",
    "receipt": "Other tool calls:",
    "user": "About the user:",
    "evidence": "Raw evidence (exact, rehydrated):",
}
"""Sections of the runtime-context block, in the order they render."""
