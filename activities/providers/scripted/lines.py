"""One rendered line of an assembled context, parsed: memories, tool calls, checkpoints.

Each parser takes the text after a line's ``[m:<id>]`` / ``[t:<id>]`` /
``[c:<id>]`` prefix, as :mod:`policy.lines` wrote it, and returns a frozen
record; :mod:`activities.providers.scripted.context` walks the sections and calls them.
The patterns are built from the writers' own constants (markers and statuses
from :mod:`policy.lines`, summary separators and title clipping from
:mod:`policy.derive`), so the two sides cannot drift apart.

Line shapes (ids are short ids, ``<args>`` as the renderer writes them)::

    [m:<id>] <tool>(<k=v, ...>) → <summary>           a tool memory
    [m:<id>] <tool>(<k=v, ...>) FAILED: <last line>    a failure memory
    [m:<id>] generated file <name>, <n> bytes at <uri> a file handle
    [m:<id>] subagent <name> succeeded; report: <text> a promoted report
    [m:<id>] from subagent <name>: <memory text>       a promoted file or failure
    [m:<id>] STALE since <t>: <title> (observed <t>); re-run <tools>
    [t:<id>] <tool>(<json>) DEFERRED|PENDING|RETRYING|FAILED ...   an open call
    [t:<id>] <tool>(<json>) ok                          a receipt
    [c:<id>] <kind>: <json state> refs <ids>            a checkpoint
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Literal

from policy.compact import CompactParseError, parse_compact, to_json
from policy.derive import (
    FAILED_SEPARATOR,
    FILE_HANDLE_PREFIX,
    PROMOTED_PREFIX,
    PROMOTED_SEPARATOR,
    RESULT_SEPARATOR,
    SUBAGENT_OUTCOMES,
    SUBAGENT_REPORT_PREFIX,
    SUBAGENT_REPORT_SEPARATOR,
    UNPARSED_SEPARATOR,
    derive_memory,
    title_value,
)
from policy.enums import UNRESOLVED_STATUSES, ToolCallStatus
from policy.lines import ARGUMENTS_CHARS, CLIPPED, RECEIPT_STATUS, STALE_MARKER, RefKind, status_word
from policy.lines import ref as ref_of
from policy.native import ERROR_TEXT, PENDING_TEXT, SUMMARY_TEXT, SUPERSEDED_TEXT, WITHHELD_TEXT
from policy.records import ToolCallRequest, canonical_json
from policy.tools import ToolSpec, canonical_name


def _one_of(*texts: str) -> str:
    """A regex alternation matching any of ``texts`` literally."""
    return "|".join(re.escape(text) for text in texts)


_TOOL = r"(?P<tool>[A-Za-z][\w.-]*)"
_RESULT = re.compile(
    _TOOL + r"\((?P<args>.*?)\)(?P<sep>" + _one_of(RESULT_SEPARATOR, FAILED_SEPARATOR, UNPARSED_SEPARATOR)
    + r")(?P<rest>.*)", re.DOTALL)
_TITLE = re.compile(_TOOL + r"\((?P<args>.*)\)", re.DOTALL)
_STALE = re.compile(
    re.escape(STALE_MARKER) + r"(?: since \S+)?: (?P<title>.*) \(observed [^)]*\); re-run (?P<tools>.*)", re.DOTALL)
_FILE = re.compile(re.escape(FILE_HANDLE_PREFIX)
                   + r"(?P<name>.+?)(?:, (?P<bytes>\d+) bytes)?(?: at (?P<uri>\S+))?(?: \(.*)?", re.DOTALL)
_REPORT = re.compile(
    re.escape(SUBAGENT_REPORT_PREFIX) + r"(?P<name>\S+) (?P<outcome>" + _one_of(*SUBAGENT_OUTCOMES) + ")"
    + re.escape(SUBAGENT_REPORT_SEPARATOR) + r"(?P<report>.*)", re.DOTALL)
_PROMOTED = re.compile(re.escape(PROMOTED_PREFIX) + r"(?P<name>\S+)" + re.escape(PROMOTED_SEPARATOR) + r"(?P<inner>.*)",
                       re.DOTALL)
_CALL_HEAD = re.compile(_TOOL + r"\(")
_CALL_TAIL = re.compile(
    r"\) (?P<status>" + _one_of(RECEIPT_STATUS, *sorted(status_word(status) for status in UNRESOLVED_STATUSES))
    + r")(?P<detail>.*)", re.DOTALL)
_JSON = json.JSONDecoder()
_CHECKPOINT = re.compile(r"(?P<kind>\w+): (?P<state>\{.*\})(?: refs (?P<refs>.*))?", re.DOTALL)
_NATIVE_ERROR = re.compile(re.escape(ERROR_TEXT.split("{", 1)[0]) + r"(?P<attempts>\d+) attempt", re.DOTALL)
_NATIVE_PENDING = re.compile(re.escape(PENDING_TEXT.split("{", 1)[0]) + r"(?P<status>\w+)(?P<detail>.*)"
                             + re.escape(PENDING_TEXT.rsplit("}", 1)[1]), re.DOTALL)
_NATIVE_SUMMARY = re.compile(r"\[" + re.escape(RefKind.MEMORY) + r":(?P<id>[^\]\s]+)\] (?P<line>.*)"
                             + re.escape(SUMMARY_TEXT.split("}", 1)[1].split("{", 1)[0]) + r".*", re.DOTALL)
_NATIVE_WITHHELD = WITHHELD_TEXT.split("{", 1)[0]
_NATIVE_SUPERSEDED = SUPERSEDED_TEXT.split("{", 1)[0]
_NATIVE_STALE = re.compile(
    r"\[" + re.escape(RefKind.MEMORY) + r":(?P<id>[^\]\s]+)\] (?P<line>" + re.escape(STALE_MARKER) + r".*)", re.DOTALL)
_TITLE_ARG = re.compile(r", (?=[A-Za-z_]\w*=)")


def _title_args(text: str) -> tuple[dict[str, str], bool]:
    """``k=v, k=v`` -> ({k: v}, clipped); the renderer clips long argument lists with ``…``."""
    args: dict[str, str] = {}
    for part in _TITLE_ARG.split(text) if text else ():
        key, sep, value = part.partition("=")
        if sep:
            args[key] = value
    return args, text.endswith("…")


@dataclass(frozen=True)
class MemoryLine:
    """One tool memory, stale marker or promoted record as the context shows it."""

    ref: str
    """``m:<short id>``: what an answer cites."""
    text: str
    """Everything after the id."""
    tool: str | None = None
    """The tool whose result it is (``None`` for file handles and reports)."""
    args: dict[str, str] = field(default_factory=dict)
    """The title's arguments, as rendered."""
    args_clipped: bool = False
    result: str = ""
    """The summary after ``→`` (or the error after ``FAILED:``); for a whole
    result shown natively, the summary the deriver writes for it."""
    raw: str | None = None
    """The whole result, when the context shows it (a native tool message)."""
    failed: bool = False
    stale: bool = False
    subagent: str | None = None
    """For a promoted record: the subagent it came from."""
    outcome: str | None = None
    """For a promoted report: how the subagent ended."""
    report: str | None = None
    file_name: str | None = None
    file_bytes: int | None = None
    file_uri: str | None = None
    text_attempts: int | None = None
    """For a failed call's native tool message: the attempts it says were made."""

    @property
    def cite(self) -> str:
        """``[m:<id>]``."""
        return f"[{self.ref}]"

    def matches(self, tool: str, arguments: dict[str, Any]) -> bool:
        """Whether this is ``tool``'s result for (at least) these arguments."""
        if self.tool != tool:
            return False
        for key, value in arguments.items():
            if key not in self.args:
                if not self.args_clipped:
                    return False
            elif self.args[key] != title_value(value):
                return False
        return True


@dataclass(frozen=True)
class CallLine:
    """One open tool call or receipt."""

    ref: str
    """``t:<short id>``."""
    tool: str
    status: Literal["ok", "PENDING", "DEFERRED", "RETRYING", "FAILED"]
    raw_args: str
    arguments: dict[str, Any] | None
    """The call's arguments, or ``None`` when the renderer clipped them."""
    detail: str
    """What follows the status: ``: waiting for ...`` or `` after 3 attempt(s): <error>``."""

    @property
    def cite(self) -> str:
        """``[t:<id>]``."""
        return f"[{self.ref}]"

    @property
    def attempts(self) -> int | None:
        """Attempts made, for a failed or retrying call."""
        found = re.search(r"after (\d+) attempt", self.detail)
        return int(found.group(1)) if found else None

    @property
    def error(self) -> str:
        """The error excerpt of a failed call, or what a deferred call waits for."""
        return self.detail.split(": ", 1)[1].strip() if ": " in self.detail else self.detail.strip()

    def matches(self, tool: str, arguments: dict[str, Any]) -> bool:
        """Whether this call is ``tool`` with (at least) these arguments."""
        if self.tool != tool:
            return False
        for key, value in arguments.items():
            if self.arguments is not None:
                if canonical_json(self.arguments.get(key)) != canonical_json(value):
                    return False
            # Clipped JSON: a key that is still visible must agree; one cut off cannot disagree.
            elif f'"{key}":' in self.raw_args and f'"{key}":{canonical_json(value)}' not in self.raw_args:
                return False
        return True


@dataclass(frozen=True)
class CheckpointLine:
    """A continuation checkpoint."""

    ref: str
    """``c:<short id>``."""
    kind: str
    """``tool_loop``, ``subagent_batch``, ``parent_resume`` or ``deferred_wait``."""
    state: dict[str, Any]
    refs: tuple[str, ...]
    """Short ids of the records the checkpoint relies on."""

    @property
    def cite(self) -> str:
        """``[c:<id>]``."""
        return f"[{self.ref}]"


@lru_cache(maxsize=1)
def _specs() -> dict[str, ToolSpec]:
    from activities.tools.registry import default_registry  # the tools import providers' base types

    return {tool.spec.name: tool.spec for tool in default_registry()}


def read_whole(tool: str, args: dict[str, str], raw: str) -> str:
    """What a scripted model takes from a whole result: the summary the deriver writes for it.

    A real model reads the bytes; a script reads summaries, so it reads a
    first-read result through the same deterministic deriver (and the
    tool's own spec) that wrote the memory's summary.
    """
    spec = _specs().get(tool) or ToolSpec(name=tool)
    draft = derive_memory(spec, "first-read", dict(args), ToolCallStatus.SUCCEEDED, raw.encode(),
                          content_type="application/octet-stream", observed_at=datetime(2000, 1, 1, tzinfo=UTC))
    return draft.summary.split(RESULT_SEPARATOR, 1)[1] if RESULT_SEPARATOR in draft.summary else draft.summary


def parse_memory(ref: str, text: str) -> MemoryLine:
    """A memory line (``ref`` is ``m:<id>``, ``text`` what follows the id).

    Never fails: a shape it does not know is kept as text with no tool.
    """
    if stale := _STALE.fullmatch(text):
        title = _TITLE.fullmatch(stale.group("title"))
        tool, args = (title.group("tool"), title.group("args")) if title else (None, "")
        parsed, clipped = _title_args(args)
        return MemoryLine(ref, text, tool=tool, args=parsed, args_clipped=clipped, stale=True)
    if report := _REPORT.fullmatch(text):
        return MemoryLine(ref, text, subagent=report.group("name"), outcome=report.group("outcome"),
                          report=quoted(report.group("report")).strip())
    if promoted := _PROMOTED.fullmatch(text):
        return replace(parse_memory(ref, promoted.group("inner")), text=text, subagent=promoted.group("name"))
    if handle := _FILE.fullmatch(text):
        size = handle.group("bytes")
        return MemoryLine(ref, text, file_name=handle.group("name"), file_bytes=int(size) if size else None,
                          file_uri=handle.group("uri"))
    if result := _RESULT.fullmatch(text):
        parsed, clipped = _title_args(result.group("args"))
        return MemoryLine(ref, text, tool=result.group("tool"), args=parsed, args_clipped=clipped,
                          result=unquoted(result.group("rest").strip()), failed=result.group("sep") == FAILED_SEPARATOR)
    return MemoryLine(ref, text)


def parse_native(call: ToolCallRequest, content: str) -> MemoryLine | CallLine:
    """A native tool message (the result of the participant's own call), as a memory or an open call.

    The tool message is the call's result as :mod:`policy.native` rendered it:
    the raw bytes (read through the deriver, as a script reads summaries), the
    result's memory line, a failed call's error, a placeholder for a call
    still open, or a withheld notice. It is cited by its call (``[t:<id>]``).
    """
    tool = canonical_name(call.name)
    args = {key: title_value(value) for key, value in call.arguments.items()}
    cited = ref_of(RefKind.TOOL_CALL, call.call_id.removeprefix("call_")[:8])
    if pending := _NATIVE_PENDING.fullmatch(content):
        status = pending.group("status").upper()
        return CallLine(cited, tool, status if status in _OPEN else "PENDING",  # type: ignore[arg-type]
                        canonical_json(call.arguments), dict(call.arguments), pending.group("detail"))
    if failed := _NATIVE_ERROR.match(content):
        error = content.split(": ", 1)[1] if ": " in content else content
        return MemoryLine(cited, content, tool=tool, args=args, result=error, failed=True,
                          text_attempts=int(failed.group("attempts")))
    if stale := _NATIVE_STALE.fullmatch(content):
        return replace(parse_memory(ref_of(RefKind.MEMORY, stale.group("id")), stale.group("line")),
                       tool=tool, args=args)
    if content.startswith((_NATIVE_WITHHELD, _NATIVE_SUPERSEDED)):
        return MemoryLine(cited, content, tool=tool, args=args, result=content)
    if summary := _NATIVE_SUMMARY.fullmatch(content):
        line = parse_memory(ref_of(RefKind.MEMORY, summary.group("id")), summary.group("line"))
        return replace(line, tool=line.tool or tool, args=line.args or args)
    raw = _document(content)
    summary_text = read_whole(tool, args, raw)
    line = MemoryLine(cited, content, tool=tool, args=args, result=summary_text, raw=raw)
    if handle := _FILE.fullmatch(summary_text):
        size = handle.group("bytes")
        line = replace(line, file_name=handle.group("name"), file_bytes=int(size) if size else None,
                       file_uri=handle.group("uri"))
    return line


_OPEN = frozenset(status_word(status) for status in UNRESOLVED_STATUSES)


def _document(content: str) -> str:
    """A native result's bytes as the tool returned them: JSON stays, a compact rendering is read back to JSON."""
    try:
        json.loads(content)
        return content
    except ValueError:
        pass
    try:
        return to_json(parse_compact(content))
    except (CompactParseError, ValueError):
        return content


def unquoted(text: str) -> str:
    """A memory line's summary as the tool's words: the renderer quotes what follows the title
    (:func:`policy.lines.quoted_data`); the caveats after the closing quote stay as they are."""
    if not text.startswith('"'):
        return text
    try:
        body, end = json.JSONDecoder().raw_decode(text)
    except ValueError:
        return text
    return (body if isinstance(body, str) else text[:end]) + text[end:]


def quoted(text: str) -> str:
    """Data from a context line as a reader quotes it: without the backslashes that kept it from citing."""
    return _ESCAPED.sub("", text)


_ESCAPED = re.compile(r"\\(?=\[\s*(?:" + "|".join(kind.value for kind in RefKind) + r")|(?:"
                      + "|".join(kind.value for kind in RefKind) + r"):)", re.IGNORECASE)


_KINDS = "|".join(re.escape(kind.value) for kind in RefKind)
_ANY_CITATION = re.compile(r"(?<!\\)\[\s*(?P<kind>" + _KINDS + r")\s*:\s*(?P<id>[^\]\s]*)\]"
                           r"|(?<![\w\\\[])(?P<bare>" + _KINDS + r"):(?P<bare_id>[0-9a-fA-F]{6,})", re.IGNORECASE)


def cite_only_shown(text: str, cited: frozenset[str]) -> str:
    """``text`` with every citation of a record the context does not cite escaped, as the renderer escapes data.

    A script quotes data back (a path the user picked, a subagent's report, an
    error): :func:`quoted` took the renderer's escapes off to read it exactly,
    so a citation look-alike inside it would read as the model citing a record.
    Only the records the context itself cites (``ContextView.cited``) stay citations.
    """
    def escape(found: re.Match[str]) -> str:
        kind, short = (found["kind"], found["id"]) if found["kind"] else (found["bare"], found["bare_id"])
        return found[0] if f"{kind.lower()}:{short}" in cited else "\\" + found[0]

    return _ANY_CITATION.sub(escape, text)


def parse_call(ref: str, text: str) -> CallLine | None:
    """An open-call or receipt line, or ``None`` when ``text`` is neither."""
    head = _CALL_HEAD.match(text)
    if not head:
        return None
    # The arguments end where their JSON ends (or, clipped, at ARGUMENTS_CHARS): a ") DEFERRED" inside a
    # string value is data, not the line's status.
    start = head.end()
    try:
        arguments, end = _JSON.raw_decode(text, start)
    except ValueError:
        arguments, end = None, start + ARGUMENTS_CHARS
        if not text[start:end].endswith(CLIPPED):
            return None
    tail = _CALL_TAIL.fullmatch(text, end)
    if not tail:
        return None
    return CallLine(ref, head.group("tool"), tail.group("status"), text[start:end],
                    arguments if isinstance(arguments, dict) else None, tail.group("detail"))


def parse_checkpoint(ref: str, text: str) -> CheckpointLine | None:
    """A checkpoint line, or ``None`` when its state is not a JSON object."""
    found = _CHECKPOINT.fullmatch(text)
    if not found:
        return None
    try:
        state = json.loads(found.group("state"))
    except ValueError:
        return None
    refs = tuple((found.group("refs") or "").split())
    return CheckpointLine(ref, found.group("kind"), state if isinstance(state, dict) else {}, refs)


__all__ = [
    "CallLine",
    "CheckpointLine",
    "MemoryLine",
    "parse_call",
    "parse_checkpoint",
    "parse_memory",
    "parse_native",
    "title_value",
]
