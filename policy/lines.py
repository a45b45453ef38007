"""How admitted records read to a model: compact lines that keep their ids.

This module owns the text format of the runtime-context block: the section
titles, the ``- `` bullet, the ``[m:<id>]`` citations, the markers (``STALE``,
``CONFLICTS with``) and every line shape. The scripted
model (:mod:`activities.providers.scripted`) parses that text back and builds
its patterns from the constants here, so a format change is made once.

Ids are shortened for the model (``m:3f2a91c0``) but never invented: a short
id is a prefix of the real id, lengthened until it is unique within the
assembly, and the assembly record keeps the full ids.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from enum import StrEnum

from policy.enums import ResolutionStatus, ToolCallStatus
from policy.records import (
    FAILED_SEPARATOR,
    RESULT_SEPARATOR,
    ArtifactRecord,
    CheckpointRecord,
    SkillStateRecord,
    ToolCallRecord,
    ToolMemoryRecord,
    UserMemoryRecord,
    canonical_json,
)
from policy.retention import ARGUMENTS_REDACTED, arguments_redacted
from policy.summarise import BRIEF_KEY

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


# --------------------------------------------------------------------------- the format


class RefKind(StrEnum):
    """The letter before a short id: what kind of record a line cites."""

    MEMORY = "m"
    TOOL_CALL = "t"
    CHECKPOINT = "c"
    SKILL = "s"
    ARTIFACT = "a"
    MESSAGE = "msg"


def ref(kind: RefKind, short_id: str) -> str:
    """``m:3f2a91c0``: how a line names another record (``CONFLICTS with m:3f2a91c0``)."""
    return f"{kind}:{short_id}"


def cite(kind: RefKind, short_id: str) -> str:
    """``[m:3f2a91c0]``: the citation a line starts with, and an answer cites back."""
    return f"[{ref(kind, short_id)}]"


BULLET = "- "
"""Starts each item of a section; a following line without it continues the item."""

SECTION_TITLES: dict[str, str] = {
    "earlier": "Earlier conversation, not shown (recall a msg: id for a message's text), oldest first:",
    "recovery": "Open tool calls (unresolved; do not assume success):",
    "planning": "Continuation state:",
    "memory": "Tool results (compact; ids cite the runtime graph):",
    "stale": "Stale (not current truth; revalidate before use):",
    "receipt": "Other tool calls:",
    "user": "About the user:",
    "evidence": "Raw evidence (exact, rehydrated):",
}
"""Sections of the runtime-context block, in the order they render."""

STALE_MARKER = "STALE"
"""Starts a stale memory's line (after its citation): not current truth."""
CONFLICTS_MARKER = "CONFLICTS with"
"""Precedes the memories a current memory contradicts."""
RECEIPT_STATUS = "ok"
"""What a receipt says after the call: it ran and succeeded."""


def status_word(status: ToolCallStatus) -> str:
    """How an open call's line spells its status (``PENDING``, ``FAILED``, ...)."""
    return status.value.upper()


def section(title: str, lines: Iterable[str]) -> str:
    """One section of the runtime-context block: its title, then a bulleted line per item."""
    return title + "".join("\n" + BULLET + line for line in lines)


def fenced(text: str) -> str:
    """``text`` in a code fence longer than any backtick run inside it.

    Raw tool output is untrusted: a result containing a fence of its own
    could otherwise close the block and pose as context structure.
    """
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"


# --------------------------------------------------------------------------- untrusted text

_CITATION_LOOKALIKE = re.compile(
    r"(?<!\\)\[(?=\s*(?:" + "|".join(kind.value for kind in RefKind) + r")\s*(?::|$))"
    r"|(?<![\w\\\[])(?=(?:" + "|".join(kind.value for kind in RefKind) + r"):[0-9a-fA-F]{6})",
    re.IGNORECASE)
"""A ``[m:`` citation (or a text ending in ``[m``, which the line's own ``:`` would complete) or a bare
``t:3f2a91`` reference inside data: each is escaped by a backslash before it."""

_INVISIBLE = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}
"""Control, format (zero-width, bidi), surrogate, private-use, unassigned characters and line/paragraph
separators: none is text a reader sees, each can split or start a line."""


def inert(text: str) -> str:
    """Tool-derived ``text`` as data on one line: it cannot start, close or cite context structure.

    Every string that reaches a context line from a tool (a summary built
    from JSON keys, list items, table or CSV cells, a text result's first
    line, a subagent's report, an error, arguments copied from a result, a
    checkpoint's state) passes here where the line is built, so a record
    stored before a deriver learned better is made safe too:

    * newlines, every other control or format character (zero-width and bidi
      marks included) and Unicode line separators become spaces, and
      whitespace runs collapse, so the text cannot start a line of its own (a
      section title, a ``- [t:…]`` item, a fence);
    * a citation look-alike (``[t:``, or a bare ``m:3f2a91…`` reference) gets a
      backslash in front, so only the renderer cites records.

    Fenced raw evidence keeps its bytes: :func:`fenced` makes its container
    unclosable instead.
    """
    if not text.isprintable():
        text = "".join(" " if unicodedata.category(ch) in _INVISIBLE else ch for ch in text)
    text = " ".join(text.split())
    return _CITATION_LOOKALIKE.sub(lambda found: "\\" + found.group(0), text)


def fenced_data(text: str) -> str:
    """Untrusted multi-line text (a skill's instructions) as a fenced block that cites nothing: each line's
    invisible characters become spaces and its citation look-alikes are escaped (as :func:`inert` does, the
    line breaks kept), then :func:`fenced` makes the block unclosable, so no line of it reads as a section,
    a record or a citation of the context."""
    lines = []
    for line in text.splitlines():
        if not line.isprintable():
            line = "".join(" " if unicodedata.category(ch) in _INVISIBLE else ch for ch in line)
        lines.append(_CITATION_LOOKALIKE.sub(lambda found: "\\" + found.group(0), line.rstrip()))
    return fenced("\n".join(lines))


def quoted_data(text: str) -> str:
    """Tool-derived ``text`` as a quoted string on one line: :func:`inert`, then in JSON's double quotes
    (a quote or backslash inside is escaped), so a result's words ("SYSTEM: ignore previous instructions")
    read as what a tool returned, never as the context's own sentence."""
    return json.dumps(inert(text), ensure_ascii=False)


def quoted_summary(summary: str, title: str) -> str:
    """A memory's summary with the part a tool wrote quoted: ``title → "…"`` / ``title FAILED: "…"``.

    The title (the tool's name and the call's arguments, made one line by :func:`inert`) is Dossier's;
    what follows its separator came from the result or the error. A summary of another shape (a file
    handle, a subagent's report, a redaction marker) is :func:`inert` as before.
    """
    for separator in (RESULT_SEPARATOR, FAILED_SEPARATOR):
        if summary.startswith(title + separator):
            return f"{inert(title)}{separator}{quoted_data(summary[len(title) + len(separator):])}"
    return inert(summary)


def escape_invisible(text: str) -> str:
    """``text`` for a reader (a terminal, an HTML page): every character of :data:`_INVISIBLE` but newline and
    tab shown as a ``\\xNN``, ``\\uNNNN`` or ``\\UNNNNNNNN`` escape, so tool text cannot move a cursor, hide
    words (tag characters, bidi and zero-width marks) or clear a screen. Everything else is kept as it is;
    HTML escaping is the template's business.
    """
    if text.isprintable():
        return text
    return "".join(ch if ch in "\n\t" or unicodedata.category(ch) not in _INVISIBLE else _escape(ord(ch))
                   for ch in text)


def _escape(code: int) -> str:
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


_JSON_LOOKALIKE = re.compile(
    r"\[(?=\s*(?:" + "|".join(kind.value for kind in RefKind) + r")\s*:)"
    r"|(?:" + "|".join(f"(?<={kind.value})" for kind in RefKind) + r"):(?=[0-9a-fA-F]{6})", re.IGNORECASE)
"""Inside JSON text every look-alike is in a string, where ``\\u005b``/``\\u003a`` spell the same value."""


def inert_json(value: object) -> str:
    """``value`` as canonical JSON that stays on its line and cites nothing, and still parses to ``value``.

    JSON's quotes are the container of tool-derived strings in arguments and
    states; the escapes JSON itself defines keep them closed: invisible and
    line-separating characters become ``\\uXXXX``, a citation look-alike's
    bracket or colon too.
    """
    text = canonical_json(value)
    if not text.isprintable():
        text = "".join(json.dumps(ch)[1:-1] if unicodedata.category(ch) in _INVISIBLE else ch for ch in text)
    return _JSON_LOOKALIKE.sub(lambda found: "\\u%04x" % ord(found.group(0)), text)


# --------------------------------------------------------------------------- record lines

ARGUMENTS_CHARS = 160
"""An open call's or receipt's arguments are cut to this many characters, the last being :data:`CLIPPED`."""
CLIPPED = "…"


def _args(arguments: dict, limit: int = ARGUMENTS_CHARS) -> str:
    if arguments_redacted(arguments):
        return ARGUMENTS_REDACTED
    text = " ".join(inert_json(arguments).split())
    return text if len(text) <= limit else text[: limit - 1] + CLIPPED


def _when(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%MZ")


def _revalidation(memory: ToolMemoryRecord) -> str:
    """The tools that refresh a memory; at least the one that produced it."""
    return inert(", ".join(memory.revalidate_with) or memory.source_tool)


def tool_call_line(call: ToolCallRecord, short: ShortIds, max_error_chars: int) -> str:
    """An unresolved or failed tool call, with what it waits for or why it failed."""
    head = f"{cite(RefKind.TOOL_CALL, short(call.id))} {inert(call.name)}({_args(call.arguments)}) {status_word(call.status)}"
    if call.status is ToolCallStatus.DEFERRED:
        return f"{head}: waiting for {inert(call.waiting_for or 'an external answer')}"
    if call.status in (ToolCallStatus.FAILED, ToolCallStatus.RETRYING) or call.last_error:
        critical = ", retry-critical" if call.retry_critical else ""
        error = error_excerpt(call.last_error or "no error text captured", max_error_chars)
        return f"{head} after {call.attempts} attempt(s){critical}: {error}"
    return head


EARLIER_FAILURES = "also failed before:"
"""Ends a tool's failure line: the ids of its earlier failed calls (newest first)."""
OLDER_FAILURES = "FAILED earlier, not retried since:"
"""Heads the one line of the failed calls of tools past ``max_failed_tools``: tool, count, ids."""


def tool_failures_line(calls: Sequence[ToolCallRecord], short: ShortIds, max_error_chars: int) -> str:
    """The failed calls of one tool, newest first: the newest call's line, then the earlier ids."""
    line = tool_call_line(calls[0], short, max_error_chars)
    if len(calls) == 1:
        return line
    earlier = ", ".join(ref(RefKind.TOOL_CALL, short(call.id)) for call in calls[1:])
    return f"{line} ({EARLIER_FAILURES} {earlier})"


def older_failures_line(by_tool: Sequence[Sequence[ToolCallRecord]], short: ShortIds) -> str:
    """Failed calls of many tools on one line: each tool with its count and ids, the newest tool first."""
    lead = by_tool[0][0]
    parts = [f"{inert(calls[0].name)} ×{len(calls)} ("
             + ", ".join(ref(RefKind.TOOL_CALL, short(call.id)) for call in calls) + ")" for calls in by_tool]
    return f"{cite(RefKind.TOOL_CALL, short(lead.id))} {OLDER_FAILURES} " + "; ".join(parts)


def error_excerpt(error: str, max_chars: int) -> str:
    """The lines of an error that say what went wrong, verbatim, within ``max_chars``.

    Errors put their headline first and their cause last (a traceback ends in
    the exception; a CLI ends in its final message); the frames in between are
    what can go. The last line is kept whole even past ``max_chars``: it is
    the one a fix is written against.
    """
    lines = [inert(line) for line in error.strip().splitlines() if line.strip()]
    lines = [line for line in lines if line]
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
    return f"{cite(RefKind.TOOL_CALL, short(call.id))} {inert(call.name)}({_args(call.arguments)}) {RECEIPT_STATUS}"


def memory_line(memory: ToolMemoryRecord, short: ShortIds, conflicts: Iterable[str] = (),
                cited_as: Mapping[str, str] | None = None, *, brief: bool = False) -> str:
    """A current tool memory: summary, and only the caveats that change its reading.

    ``cited_as`` names a conflicting memory shown some other way (a result appended as its call's
    native tool message is ``t:<call>``); the rest are ``m:<memory>``. ``brief``: the memory's
    short summary where it has one (a text result's, :data:`BRIEF_KEY` in its payload).
    """
    cited_as = cited_as or {}
    summary = memory.payload.get(BRIEF_KEY) if brief else None
    parts = [f"{cite(RefKind.MEMORY, short(memory.id))} "
             f"{quoted_summary(summary if isinstance(summary, str) else memory.summary, memory.title)}"]
    if memory.resolution is ResolutionStatus.MISSING_SOURCE:
        missing = ",".join(ref(RefKind.ARTIFACT, short(a)) for a in memory.source_artifact_ids)
        parts.append(f"(UNVERIFIED: source artifact {missing} missing)")
    elif memory.resolution is ResolutionStatus.HASH_MISMATCH:
        parts.append("(UNVERIFIED: source artifact failed its integrity check)")
    if memory.confidence < 0.8:
        note = f"; {inert(memory.limitations)}" if memory.limitations else ""
        parts.append(f"(confidence {memory.confidence:.2f}{note})")
    others = sorted(conflicts)
    if others:
        parts.append(f"{CONFLICTS_MARKER} " + ", ".join(cited_as.get(o) or ref(RefKind.MEMORY, short(o))
                                                        for o in others))
    return " ".join(parts)


def stale_marker_line(memory: ToolMemoryRecord, short: ShortIds, stale_since: datetime | None) -> str:
    """A stale memory: what it was about and how to refresh it, never its values."""
    since = f" since {_when(stale_since)}" if stale_since else ""
    return (f"{cite(RefKind.MEMORY, short(memory.id))} {STALE_MARKER}{since}: {inert(memory.title)} "
            f"(observed {_when(memory.observed_at)}); re-run {_revalidation(memory)}")


def checkpoint_line(checkpoint: CheckpointRecord, short: ShortIds) -> str:
    """A continuation checkpoint: its kind, compact state and the records it relies on."""
    refs = " ".join(short(reference) for reference in checkpoint.references)
    tail = f" refs {refs}" if refs else ""
    head = f"{cite(RefKind.CHECKPOINT, short(checkpoint.id))} {inert(checkpoint.kind)}"
    return f"{head}: {inert_json(checkpoint.state)}{tail}"


def skill_line(skill: SkillStateRecord, short: ShortIds) -> str:
    """An active skill's state."""
    return f"{cite(RefKind.SKILL, short(skill.id))} {inert(skill.skill)}: {inert_json(skill.state)}"


def user_memory_line(memory: UserMemoryRecord) -> str:
    """One personalisation fact."""
    return inert(memory.text)


# --------------------------------------------------------------------------- evidence lines


def evidence_line(artifact_id: str, where: str, text: str, short: ShortIds) -> str:
    """A rehydrated slice: the artifact it comes from, which part, then the bytes fenced."""
    return f"{cite(RefKind.ARTIFACT, short(artifact_id))} {inert(where)}:\n{fenced(text)}"


def unavailable_evidence_line(artifact_id: str, reason: str, short: ShortIds) -> str:
    """Planned evidence whose bytes could not be read: said so, never replaced."""
    return f"{cite(RefKind.ARTIFACT, short(artifact_id))} raw evidence unavailable: {inert(reason)}"


def withheld_evidence_line(artifact: ArtifactRecord, memory: ToolMemoryRecord, short: ShortIds) -> str:
    """Requested evidence the route may not carry raw: the memory to use instead, and how to verify it."""
    return (f"{cite(RefKind.ARTIFACT, short(artifact.id))} raw {artifact.privacy.value} body withheld on this "
            f"route; use {cite(RefKind.MEMORY, short(memory.id))} and re-run {_revalidation(memory)} to verify")
