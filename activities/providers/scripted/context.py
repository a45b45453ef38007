"""Read an assembled context back into structure: what a scripted model knows.

The scripted provider must decide from the context alone, as a real model
would: the runtime system message rendered by :mod:`policy.render` in the
line format of :mod:`policy.lines` (tool memories, stale markers, open tool
calls, receipts, checkpoints) and the transcript window after it. Nothing else reaches it, so a script that finds
its data here proves the assembly carried that data.

:func:`read_context` splits the system message into its sections and items
and parses each item with :mod:`activities.providers.scripted.lines`;
:meth:`ContextView.progress` then answers the one question every script
step asks: is my tool call done, waiting, failed, or still to do?
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Literal

from activities.providers.scripted.lines import (
    CallLine,
    CheckpointLine,
    MemoryLine,
    parse_call,
    parse_checkpoint,
    parse_memory,
    parse_native,
    title_value,
)
from policy.enums import MessageRole, ToolCallStatus
from policy.lines import BULLET, RECEIPT_STATUS, SECTION_TITLES, RefKind, ref, status_word
from policy.native import SAME_TEXT
from policy.records import ChatMessage, ToolCallRequest
from policy.transcript import DIRECTIVE_SEPARATOR, SPEAKER_SEPARATOR

_SECTION_OF_TITLE = {title: name for name, title in SECTION_TITLES.items()}
_ITEM = re.compile(
    re.escape(BULLET) + r"\[(?P<kind>" + "|".join(re.escape(kind) for kind in RefKind)
    + r"):(?P<id>[^\]\s]+)\] ?(?P<rest>.*)", re.DOTALL)
_FENCE = re.compile(r"`{3,}")
_LABEL = r"(?P<label>[A-Z][\w .'-]{0,40})"
_DIRECTIVE = re.compile(_LABEL + re.escape(DIRECTIVE_SEPARATOR) + r"(?P<text>.*)", re.DOTALL)
_SPEAKER = re.compile(_LABEL + re.escape(SPEAKER_SEPARATOR) + r"(?P<text>.*)", re.DOTALL)
_FAILED = status_word(ToolCallStatus.FAILED)
_SAME = re.compile(re.escape(SAME_TEXT.split("{", 1)[0]) + r"\[(?P<call>[^\]\s]+)\] above.*", re.DOTALL)

State = Literal["todo", "waiting", "failed", "done"]


@dataclass(frozen=True)
class Progress:
    """Where one step (a tool with given arguments) stands in the context."""

    state: State
    memory: MemoryLine | None = None
    """The result, when the step is done and its memory is in view."""
    call: CallLine | None = None
    """The open call (waiting, failed) or receipt (done without a memory)."""
    failure: MemoryLine | None = None
    """A failure memory, when the failure shows as a memory rather than an open call."""
    stale: MemoryLine | None = None
    """A stale marker for the step: the result exists but must be fetched again."""

    @property
    def cite(self) -> str:
        """The id that evidences this state."""
        for line in (self.memory, self.call, self.failure, self.stale):
            if line is not None:
                return line.cite
        return ""


@dataclass(frozen=True)
class ContextView:
    """A parsed context: runtime records and the transcript window."""

    system_prompt: str = ""
    """The participant's own prompt, before the runtime sections."""
    memories: tuple[MemoryLine, ...] = ()
    """Current memories in the order shown (the renderer lists newer ones first), then stale markers."""
    calls: tuple[CallLine, ...] = ()
    """Open tool calls, then receipts."""
    checkpoints: tuple[CheckpointLine, ...] = ()
    """Continuation checkpoints (the latest of each kind)."""
    other_lines: tuple[str, ...] = ()
    """Skill states, user facts and evidence, verbatim."""
    transcript: tuple[ChatMessage, ...] = ()
    directives: tuple[str, ...] = ()
    """Moderator directives, text only, oldest first."""
    cited: frozenset[str] = frozenset()
    """Every record the context itself cites (``m:3f2a91c0``): the ref each item line starts with and each
    appended result's call. Citation look-alikes inside data are escaped by the renderer, so none is here."""

    # ------------------------------------------------------------------ transcript

    def latest_user_text(self) -> str:
        """The newest user-role message (a human's, or another speaker's line in a discussion)."""
        for message in reversed(self.transcript):
            if message.role is MessageRole.USER:
                return message.content or ""
        return ""

    def user_texts(self) -> list[str]:
        """Every user-role message in the window, newest first."""
        return [m.content or "" for m in reversed(self.transcript) if m.role is MessageRole.USER]

    def latest_speaker(self) -> tuple[str | None, str]:
        """``(label, text)`` of the newest user-role message; label ``None`` for an unlabelled human."""
        text = self.latest_user_text()
        found = _SPEAKER.fullmatch(text)
        return (found.group("label"), found.group("text")) if found else (None, text)

    def own_turns(self) -> int:
        """How many of this participant's own answers are in the window."""
        return sum(1 for message in self.transcript if message.role is MessageRole.ASSISTANT and message.content)

    # ------------------------------------------------------------------ runtime records

    def results(self, tool: str, **arguments: Any) -> list[MemoryLine]:
        """Current, successful memories of ``tool`` for these arguments, newest first.

        Records promoted from a subagent are the subagent's work, not a step
        of this participant's, so they never count here.
        """
        return [m for m in self.memories
                if not m.stale and not m.failed and m.subagent is None and m.matches(tool, arguments)]

    def progress(self, tool: str, **arguments: Any) -> Progress:
        """Where the step ``tool(arguments)`` stands: done, waiting, failed, or still to do.

        A result in view wins over everything (a later success resolves an
        earlier failure); then an open call; then a failure memory; then a
        receipt. A stale marker alone means the step must run again.
        """
        found = self.results(tool, **arguments)
        if found:
            return Progress("done", memory=found[0])
        calls = [c for c in self.calls if c.matches(tool, arguments)]
        for call in calls:
            if call.status == _FAILED:
                return Progress("failed", call=call)
            if call.status != RECEIPT_STATUS:
                return Progress("waiting", call=call)
        failures = [m for m in self.memories
                    if m.failed and not m.stale and m.subagent is None and m.matches(tool, arguments)]
        if failures:
            return Progress("failed", failure=failures[0])
        if calls:
            return Progress("done", call=calls[0])
        stale = [m for m in self.memories if m.stale and m.matches(tool, arguments)]
        return Progress("todo", stale=stale[0] if stale else None)

    def file_progress(self, name: str) -> Progress:
        """Where writing the file ``name`` stands: its handle memory, or the ``files.write`` call."""
        for memory in self.memories:
            if memory.file_name == name and memory.subagent is None and not memory.stale:
                return Progress("done", memory=memory)
        return self.progress("files.write", name=name)

    def reports(self) -> list[MemoryLine]:
        """Promoted subagent reports, in the order shown."""
        return [m for m in self.memories if m.report is not None]

    def promoted(self) -> list[MemoryLine]:
        """Promoted file handles and failures from subagents."""
        return [m for m in self.memories if m.subagent is not None and m.report is None]


# --------------------------------------------------------------------------- parsing


def read_context(messages: tuple[ChatMessage, ...] | list[ChatMessage]) -> ContextView:
    """Parse an assembled context.

    Args:
        messages: the provider messages, as the assembler rendered them.

    Returns:
        The parsed view. Lines it does not recognise are kept verbatim in
        ``other_lines``; parsing never fails.
    """
    messages = list(messages)
    leading = 0
    while leading < len(messages) and messages[leading].role is MessageRole.SYSTEM:
        leading += 1
    # The participant's prompt, then the runtime sections: one text, as they were written.
    runtime = "\n\n".join(m.content or "" for m in messages[:leading])
    conversation = messages[leading:]
    directives = tuple(
        found.group("text")
        for message in conversation
        if message.role is MessageRole.USER and (found := _DIRECTIVE.fullmatch(message.content or ""))
    )
    native_memories, native_calls = _native_results(conversation)
    prompt, items = _split_sections(runtime)
    memories: list[MemoryLine] = []
    stale: list[MemoryLine] = []
    calls: list[CallLine] = []
    checkpoints: list[CheckpointLine] = []
    other: list[str] = []
    cited = {line.ref for line in (*native_memories, *native_calls)}
    for section, text in items:
        item = _ITEM.fullmatch(text)
        if item:
            cited.add(ref(RefKind(item.group("kind")), item.group("id")))
        parsed: Any = None
        if item and item.group("kind") == RefKind.MEMORY:
            parsed = parse_memory(ref(RefKind.MEMORY, item.group("id")), item.group("rest"))
            (stale if parsed.stale else memories).append(parsed)
        elif item and item.group("kind") == RefKind.TOOL_CALL:
            parsed = parse_call(ref(RefKind.TOOL_CALL, item.group("id")), item.group("rest"))
            if parsed:
                calls.append(parsed)
        elif item and item.group("kind") == RefKind.CHECKPOINT:
            parsed = parse_checkpoint(ref(RefKind.CHECKPOINT, item.group("id")), item.group("rest"))
            if parsed:
                checkpoints.append(parsed)
        if parsed is None:
            other.append(f"{section}: {text.removeprefix(BULLET)}")
    return ContextView(
        system_prompt=prompt,
        # Appended results are the newest: they come first, as newer memories do in the sections.
        memories=tuple(native_memories + memories + stale),
        calls=tuple(native_calls + calls),
        checkpoints=tuple(checkpoints),
        other_lines=tuple(other),
        transcript=tuple(m for m in conversation if m.role is not MessageRole.TOOL),
        directives=directives,
        cited=frozenset(cited),
    )


def _native_results(conversation: list[ChatMessage]) -> tuple[list[MemoryLine], list[CallLine]]:
    """The participant's own tool steps after the prefix: each tool message read as its call's result.

    Returns:
        Memories (newest first) and open calls, as :func:`parse_native` reads them.
    """
    requests: dict[str, ToolCallRequest] = {}
    read: dict[str, MemoryLine | CallLine] = {}
    memories: list[MemoryLine] = []
    calls: list[CallLine] = []
    for message in conversation:
        for request in message.tool_calls:
            requests[request.call_id] = request
        if message.role is MessageRole.TOOL and message.tool_call_id in requests:
            request = requests[message.tool_call_id]
            same = _SAME.fullmatch(message.content or "")
            earlier = read.get(same.group("call")) if same else None  # by its cite, t:<id>
            if isinstance(earlier, MemoryLine):  # identical bytes shown above: the same result, cited anew
                parsed: MemoryLine | CallLine = replace(
                    earlier, ref=ref(RefKind.TOOL_CALL, request.call_id.removeprefix("call_")[:8]))
            else:
                parsed = parse_native(request, message.content or "")
            read[ref(RefKind.TOOL_CALL, request.call_id.removeprefix("call_")[:8])] = parsed
            (memories if isinstance(parsed, MemoryLine) else calls).append(parsed)
    return list(reversed(memories)), list(reversed(calls))


def _split_sections(runtime: str) -> tuple[str, list[tuple[str, str]]]:
    """The system prompt, and ``(section, item text)`` for every bulleted item."""
    prompt: list[str] = []
    items: list[tuple[str, str]] = []
    section: str | None = None
    fence: str | None = None
    for line in runtime.split("\n"):
        if fence is not None:
            # Raw tool output inside a fence is the item's text, whatever it looks like.
            items[-1] = (items[-1][0], items[-1][1] + "\n" + line)
            fence = None if line == fence else fence
        elif items and _FENCE.fullmatch(line):
            fence = line
            items[-1] = (items[-1][0], items[-1][1] + "\n" + line)
        elif line in _SECTION_OF_TITLE:
            section = _SECTION_OF_TITLE[line]
        elif section is None:
            prompt.append(line)
        elif line.startswith(BULLET) and (section == "user" or _ITEM.match(line)):
            items.append((section, line))
        elif items:
            # A multi-line item (a report with line breaks, rehydrated evidence) continues here.
            items[-1] = (items[-1][0], items[-1][1] + "\n" + line)
    # The blank line that separates one section from the next belongs to neither.
    return "\n".join(prompt).strip(), [(section, text.rstrip("\n")) for section, text in items]


__all__ = [
    "CallLine",
    "CheckpointLine",
    "ContextView",
    "MemoryLine",
    "Progress",
    "read_context",
    "title_value",
]
