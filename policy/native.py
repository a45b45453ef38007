"""The appended part of an epoch: events after its boundary, as native chat messages.

Everything after the epoch's boundary ``seq`` reaches the participant in the
order it happened, the way a model is trained to read it: its own calls as an
assistant message with ``tool_calls`` and each result as the ``tool`` message
right after (the first read of a result is that tool message), user messages
and other participants' visible messages as labelled user turns. Every event
passes the same gates as the prefix does. What a result's tool message holds:

* the raw result, when its route may carry it raw and it is at most
  ``native_result_bytes`` (the bytes are read like rehydrated evidence, hash
  verified, and untrusted: a tool message is data, never instructions); a
  JSON or Python-literal result as its compact, lossless text
  (:mod:`policy.compact`) when ``native_compact`` and that is shorter;
* a text result over that cap: a bounded view of about ``native_view_bytes`` (head, tail, the lines
  that say something failed, and the line ranges of the rest to recall, :mod:`policy.views`);
* otherwise the result's compact memory line (with why the raw is not shown);
* the error's headline and final lines for a failed call;
* the stale marker, once the result is past its freshness (a result never
  reads as current truth after it has gone stale; the next call restarts the
  epoch so the marker moves to the prefix);
* a placeholder for a call that has no result yet (the real result, when it
  arrives, starts a new epoch: a tool result is never sent twice);
* a removal notice for a call whose result retention deleted (never "no
  result yet": the call ended, its result is gone on purpose);
* a withheld notice when the route may not receive the result's privacy class.

Planning is pure and needs no bytes: token counts of raw results come from
the artifact (counted when it was captured).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, MutableMapping, Sequence

from policy.compact import compact_text
from policy.payloads import decode_payload, parse_structured
from policy.enums import MessageRole, ToolCallStatus
from policy.epochs import step_calls
from policy.gates import admit, check_privacy, is_stale, stale_at
from policy.lines import RefKind, ShortIds, cite, error_excerpt, inert, memory_line, stale_marker_line
from policy.plans import Event, EventsPlan, ResultPlan
from policy.policy import ContextPolicy
from policy.records import (
    ArtifactRecord,
    ChatMessage,
    MessageRecord,
    RehydrationItem,
    ToolCallRecord,
    ToolCallRequest,
    ToolMemoryRecord,
)
from policy.rehydration import bounded
from policy.selection import SelectionContext
from policy.retention import RESULT_REMOVED_TEXT, result_removed
from policy.tokens import MESSAGE_OVERHEAD_TOKENS, TokenCounter, count_message
from policy.tools import wire_name
from policy.transcript import chat_message
from policy.views import VIEW_HEADER, text_view, viewable

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")

PENDING_TEXT = "No result yet (the call is {status}{detail}). Do not assume it succeeded."
"""A placeholder tool message for a call still open when the context is assembled."""
WITHHELD_TEXT = "Result withheld on this route: it is {privacy} data."
"""The tool message of a result whose privacy class the provider route may not receive."""
ERROR_TEXT = "FAILED after {attempts} attempt(s){critical}: {error}"
"""The tool message of a failed call: its error's headline and final lines, verbatim."""
SUMMARY_TEXT = "{line} (whole result: {size} bytes in the runtime graph; {why})"
SUPERSEDED_TEXT = ("Superseded: {by} above is a newer result for the same resource; this one's {size} bytes "
                   "are not repeated.")
"""The tool message of a result that a newer one, shown in the prefix on this lineage, replaced."""
"""The tool message of a result shown by its compact memory instead of its bytes."""
CONFLICTS_NOTE = ("Runtime note: the result of {call} CONFLICTS with {others} in the context above; "
                  "neither is known to be the current one.")
"""Appended after a result whose values contradict a result or memory shown above it."""
SUPERSEDES_NOTE = "Runtime note: the result of {call} supersedes {old} in the context above."
SETTLES_NOTE = ("Runtime note: the result of {call} completes what {old} failed to do; listed as open above, "
                "it is settled.")
"""After a succeeded result whose resource an open failure in the prefix names (the prefix stays byte for byte
within an epoch, so it still lists the failure as open)."""
"""Appended after a result that replaces an earlier result shown above it, or (``epoch_supersession="note"``)
a memory of the prefix."""


def native_call_id(call_id: str) -> str:
    """A tool call's id as provider APIs accept it (1-64 of ``[A-Za-z0-9_-]``), stable for the call."""
    return ("call_" + _UNSAFE.sub("", call_id))[:64]


def plan_events(
    ctx: SelectionContext,
    messages: Sequence[MessageRecord],
    prefix_memories: frozenset[str] = frozenset(),
    *,
    whole: bool = True,
    stale_notes: Sequence[tuple[int, str]] = (),
    prefix_open: frozenset[str] = frozenset(),
) -> EventsPlan:
    """Plan the native messages for ``messages`` (the lineage messages after the boundary, oldest first).

    Args:
        ctx: the pass (its candidates hold the calls, artifacts and memories of the participant's steps).
        messages: the transcript messages after the epoch's boundary.
        prefix_memories: ids of the memories the prefix shows (what a result may supersede).
        whole: results may be shown whole; ``False`` shows every result by its summary (a new epoch
            whose events alone would not fit the budget).
        stale_notes: ``(after_seq, text)`` of each prefix memory that went stale during the epoch
            (``epoch_staleness="note"``): a runtime note after the events up to ``after_seq``.
        prefix_open: ids of the failed calls the prefix lists as open recovery state; a later success of
            the same resource is followed by a note that settles them.

    Returns:
        The events, the raw bytes to read, the estimated tokens and the open calls.
    """
    policy, candidates, participant, viewer, short, counter = (ctx.policy, ctx.candidates, ctx.participant,
                                                               ctx.viewer, ctx.short, ctx.counter)
    artifacts = {artifact.tool_call_id: artifact for artifact in candidates.artifacts}
    artifacts_by_id = {artifact.id: artifact for artifact in candidates.artifacts}
    memories: dict[str, ToolMemoryRecord] = {}
    for memory in candidates.tool_memories:
        for artifact_id in memory.source_artifact_ids:
            if len(memory.source_artifact_ids) == 1:
                memories[artifact_id] = memory
    events: list[Event] = []
    shown: dict[str, str] = {}
    """sha256 of a result shown whole -> the native id of the call whose tool message shows it."""
    appended_memories: dict[str, str] = {}
    """Memory id -> the call whose tool message above shows its result."""
    replaced = replaced_by_prefix(candidates.tool_memories, prefix_memories)
    supersedes_of = {memory.id: memory.supersedes for memory in candidates.tool_memories}
    failed_call_of = {memory.id: artifacts_by_id[memory.source_artifact_ids[0]].tool_call_id
                      for memory in candidates.tool_memories
                      if len(memory.source_artifact_ids) == 1 and memory.source_artifact_ids[0] in artifacts_by_id
                      and artifacts_by_id[memory.source_artifact_ids[0]].status is ToolCallStatus.FAILED}
    for message in messages:
        if admit(message, message.privacy, viewer) is not None:
            continue
        own = message.role is MessageRole.ASSISTANT and message.author_participant_id == participant.id
        if not own or not message.tool_calls:
            if not message.content.strip():
                continue
            events.append(Event(chat_message(message, participant, policy.max_message_chars),
                                ref=f"message:{message.id}", seq=message.seq))
            continue
        calls = step_calls(candidates, message)
        results = tuple(
            _same_as_shown(_result(ctx, request, calls.get(request.call_id), artifacts, memories, prefix_memories,
                                   whole=whole, replaced=replaced),
                           artifacts, shown, short, counter)
            for request in message.tool_calls
        )
        notes = []
        for plan in results:
            memory = memories.get(artifacts[plan.call.id].id) if plan.call.id in artifacts else None
            if memory is None:
                continue
            old = [cite(RefKind.MEMORY, short(m)) for m in plan.supersedes] \
                if policy.epoch_supersession == "note" else []
            # An identical result already says which one it repeats.
            old += [cite(RefKind.TOOL_CALL, short(appended_memories[m])) for m in memory.supersedes
                    if m in appended_memories and appended_memories[m] != plan.same_as]
            this = cite(RefKind.TOOL_CALL, short(plan.call.id))
            if old:
                notes.append(SUPERSEDES_NOTE.format(call=this, old=", ".join(old)))
            if prefix_open and artifacts[plan.call.id].status is ToolCallStatus.SUCCEEDED:
                settled = sorted(call for call in (failed_call_of.get(m) for m in _replaced_chain(memory.id, supersedes_of))
                                 if call in prefix_open)
                if settled:
                    notes.append(SETTLES_NOTE.format(call=this, old=", ".join(
                        cite(RefKind.TOOL_CALL, short(call)) for call in settled)))
            others = [cite(RefKind.MEMORY, short(m)) for m in memory.conflicts_with if m in prefix_memories]
            others += [cite(RefKind.TOOL_CALL, short(appended_memories[m])) for m in memory.conflicts_with
                       if m in appended_memories]
            if others:
                notes.append(CONFLICTS_NOTE.format(call=this, others=", ".join(others)))
            appended_memories[memory.id] = plan.call.id
        content = _own_step_text(message.content, policy, {n for r in message.tool_calls
                                                           for n in (r.name, wire_name(r.name))})
        assistant = ChatMessage(
            role=MessageRole.ASSISTANT, content=content,
            tool_calls=tuple(ToolCallRequest(call_id=plan.native_id, name=wire_name(request.name),
                                             arguments=dict(request.arguments))
                             for request, plan in zip(message.tool_calls, results, strict=True)),
        )
        events.append(Event(assistant, results, ref=f"message:{message.id}", notes=tuple(notes), seq=message.seq))
    for after_seq, text in sorted(stale_notes):
        at = sum(1 for event in events if event.seq <= after_seq)
        events.insert(at, Event(ChatMessage(role=MessageRole.USER, content=text), ref=f"note:{after_seq}",
                                seq=after_seq))
    tokens = 0
    for event in events:
        tokens += count_message(event.message, counter)
        tokens += sum(plan.tokens for plan in event.results)
        tokens += sum(MESSAGE_OVERHEAD_TOKENS + counter(note) for note in event.notes)
    rehydration = tuple(
        RehydrationItem(artifact_id=plan.artifact_id, max_bytes=plan.max_bytes, tool_call_id=plan.call.id)
        for event in events for plan in event.results if plan.mode in READ_MODES and plan.artifact_id
    )
    pending = tuple(plan.call.id for event in events for plan in event.results if plan.mode == "pending")
    superseding = tuple(plan for event in events for plan in event.results if plan.supersedes)
    stale = tuple(plan.call.id for event in events for plan in event.results if plan.mode == "stale")
    return EventsPlan(tuple(events), rehydration, tokens, pending, superseding, stale)


def _replaced_chain(memory_id: str, supersedes_of: Mapping[str, tuple[str, ...]]) -> list[str]:
    """Every memory ``memory_id`` replaced, directly or through the memories it replaced."""
    found: list[str] = []
    stack = list(supersedes_of.get(memory_id, ()))
    while stack:
        old = stack.pop()
        if old not in found:
            found.append(old)
            stack.extend(supersedes_of.get(old, ()))
    return found


def replaced_by_prefix(memories: Sequence[ToolMemoryRecord], prefix_memories: frozenset[str]) -> dict[str, str]:
    """Memory id -> the prefix memory that replaced it, directly or through a chain of replacements.

    Decided along the lineage: the prefix shows only memories visible on it, and a memory supersedes only
    memories visible on its own lineage, so walking back from a prefix memory through ``supersedes`` never
    leaves the lineage (a sibling's replacement is never reached).
    """
    supersedes = {memory.id: memory.supersedes for memory in memories}
    replaced: dict[str, str] = {}
    for newest in sorted(prefix_memories):
        stack = list(supersedes.get(newest, ()))
        while stack:
            old = stack.pop()
            if old in replaced or old in prefix_memories:
                continue
            replaced[old] = newest
            stack.extend(supersedes.get(old, ()))
    return replaced


def _same_as_shown(plan: ResultPlan, artifacts: Mapping[str, ArtifactRecord], shown: dict[str, str],
                   short: ShortIds, counter: TokenCounter) -> ResultPlan:
    """A result byte-identical to one already shown whole above says so instead of repeating it."""
    if plan.mode != "raw" or plan.artifact_id is None:
        return plan
    sha = artifacts[plan.call.id].sha256
    if sha not in shown:
        shown[sha] = plan.call.id
        return plan
    text = SAME_TEXT.format(call=cite(RefKind.TOOL_CALL, short(shown[sha])), size=artifacts[plan.call.id].result_bytes)
    return ResultPlan(call=plan.call, native_id=plan.native_id, mode="same", text=text, artifact_id=None,
                      max_bytes=0, tokens=MESSAGE_OVERHEAD_TOKENS + counter(text), supersedes=plan.supersedes,
                      same_as=shown[sha])


SAME_TEXT = "Same result as {call} above: the same {size} bytes."
"""The tool message of a result identical, byte for byte, to one shown whole earlier in the appended part."""


def _own_step_text(text: str, policy: ContextPolicy, names: set[str]) -> str | None:
    """The participant's own words next to its tool calls, as the appended part keeps them.

    Text that only restates a call the message makes is dropped: the native
    call right after carries it. ReAct-style agents write their action into
    the text as well (a fenced JSON blob naming the tool, LangChain's
    structured chat; or ``Action: <tool>`` and ``Action Input: ...`` lines);
    the thought around it stays, up to ``own_step_text_chars``.
    """
    text = restated_calls_removed(text, names).strip()
    limit = policy.max_message_chars if policy.own_step_text_chars is None \
        else min(policy.own_step_text_chars, policy.max_message_chars)
    if not text or limit <= 0:
        return None
    return text if len(text) <= limit else text[:limit] + STEP_TEXT_CUT.format(limit=limit, size=len(text))


_FENCED = re.compile(
    r"(?:^|\n)(?:[ \t]*[A-Za-z][\w ]{0,30}:[ \t]*\n)?"  # an optional label line ("Action:")
    r"[ \t]*(?P<fence>`{3,})[\w-]*[ \t]*\n(?P<body>.*?)\n[ \t]*(?P=fence)", re.DOTALL)
"""A fenced block, with the label line before it."""
_REACT_ACTION = re.compile(
    r"(?:^|\n)[ \t]*Action:[ \t]*(?P<name>[\w.\-]+)[ \t]*\n"
    r"[ \t]*Action Input:[^\n]*(?:\n(?![ \t]*\w[\w ]*:).*)*")
"""ReAct's ``Action: <tool>`` and ``Action Input: ...`` lines (up to the next ``Label:`` line)."""


def restated_calls_removed(text: str, names: set[str]) -> str:
    """``text`` without the blocks that restate a tool call named in ``names`` (see :func:`_own_step_text`)."""

    def names_a_call(value: object) -> bool:
        if isinstance(value, str):
            return value in names
        if isinstance(value, dict):
            return any(names_a_call(v) for v in value.values())
        if isinstance(value, list):
            return any(names_a_call(v) for v in value)
        return False

    def fenced(found: re.Match[str]) -> str:
        try:
            data, _ = parse_structured(found.group("body"))
        except (ValueError, RecursionError):
            return found.group(0)
        return "" if names_a_call(data) else found.group(0)

    text = _FENCED.sub(fenced, text)
    return _REACT_ACTION.sub(lambda m: "" if m.group("name") in names else m.group(0), text)


STEP_TEXT_CUT = " [… {limit} of {size} chars; the calls below carry the step]"
"""Marks the participant's own step text cut at ``own_step_text_chars``."""


def _result(
    ctx: SelectionContext,
    request: ToolCallRequest,
    call: ToolCallRecord | None,
    artifacts: Mapping[str, ArtifactRecord],
    memories: Mapping[str, ToolMemoryRecord],
    prefix_memories: frozenset[str],
    *,
    whole: bool,
    replaced: Mapping[str, str],
) -> ResultPlan:
    policy, viewer, short, counter, now = ctx.policy, ctx.viewer, ctx.short, ctx.counter, ctx.now
    if call is None:  # the call's record is not in the candidate pool: say so rather than invent a result
        text = "No record of this call's result in the runtime graph."
        stand_in = ToolCallRecord(id=request.call_id, call_id=request.call_id, name=request.name,
                                  arguments=dict(request.arguments), status=ToolCallStatus.PENDING,
                                  branch_id="", seq=0, participant_id=viewer.participant_id)
        return _plan(stand_in, "pending", text, counter)
    artifact = artifacts.get(call.id)
    if result_removed(call.status.value, call.arguments, artifact is not None):
        return _plan(call, "removed", RESULT_REMOVED_TEXT, counter)
    if artifact is None:
        detail = f", waiting for {inert(call.waiting_for)}" if call.status is ToolCallStatus.DEFERRED and call.waiting_for \
            else (f", {call.attempts} attempt(s) so far" if call.attempts > 1 else "")
        return _plan(call, "pending", PENDING_TEXT.format(status=call.status.value, detail=detail), counter)
    memory = memories.get(artifact.id)
    supersedes = tuple(sorted(set(memory.supersedes) & prefix_memories)) if memory else ()
    if check_privacy(artifact.privacy, viewer) is not None:
        return _plan(call, "withheld", WITHHELD_TEXT.format(privacy=artifact.privacy.value), counter, supersedes)
    if memory is not None and memory.id in replaced:
        text = SUPERSEDED_TEXT.format(by=cite(RefKind.MEMORY, short(replaced[memory.id])), size=artifact.result_bytes)
        return _plan(call, "superseded", text, counter)
    if artifact.status is ToolCallStatus.FAILED:
        critical = ", retry-critical" if call.retry_critical else ""
        error = error_excerpt(call.last_error or "no error text captured", policy.max_error_chars)
        return _plan(call, "error", ERROR_TEXT.format(attempts=call.attempts, critical=critical, error=error),
                     counter, supersedes)
    if memory is not None and is_stale(memory, policy, now):
        return _plan(call, "stale", stale_marker_line(memory, short, stale_at(memory, policy)), counter, supersedes)
    line = memory_line(memory, short, brief=not policy.detailed_memories(ctx.boundary.token_budget)) if memory else f"{cite(RefKind.ARTIFACT, short(artifact.id))} captured"
    if artifact.privacy not in viewer.route.raw_allowed:
        why = f"raw {artifact.privacy.value} results are not sent on route {viewer.route.name}"
    elif artifact.result_bytes > (cap := policy.whole_result_bytes(ctx.boundary.token_budget)):
        why = f"over the {cap}-byte cap for whole results"
        if (whole and policy.native_view_bytes and artifact.result_bytes <= policy.native_view_source_bytes
                and viewable(artifact.content_type)):
            fallback = SUMMARY_TEXT.format(line=line, size=artifact.result_bytes, why="raw bytes unavailable")
            tokens = MESSAGE_OVERHEAD_TOKENS + policy.native_view_bytes // 3 + counter(VIEW_HEADER) + 1
            return ResultPlan(call=call, native_id=native_call_id(call.id), mode="view", text=fallback,
                              artifact_id=artifact.id, max_bytes=policy.native_view_bytes, tokens=tokens,
                              supersedes=supersedes, cite=cite(RefKind.ARTIFACT, short(artifact.id)))
    elif not whole:
        why = "the step's whole results would not fit the token budget"
    else:
        fallback = SUMMARY_TEXT.format(line=line, size=artifact.result_bytes, why="raw bytes unavailable")
        tokens = MESSAGE_OVERHEAD_TOKENS + (artifact.result_tokens or artifact.result_bytes // 3 + 1)
        return ResultPlan(call=call, native_id=native_call_id(call.id), mode="raw", text=fallback,
                          artifact_id=artifact.id, max_bytes=artifact.result_bytes, tokens=tokens,
                          supersedes=supersedes)
    return _plan(call, "summary", SUMMARY_TEXT.format(line=line, size=artifact.result_bytes, why=why), counter,
                 supersedes)


READ_MODES = ("raw", "view")
"""Result modes whose tool message is made from the artifact's bytes (read and hash-verified first)."""


def _plan(call: ToolCallRecord, mode: str, text: str, counter: TokenCounter,
          supersedes: tuple[str, ...] = ()) -> ResultPlan:
    return ResultPlan(call=call, native_id=native_call_id(call.id), mode=mode, text=text, artifact_id=None,
                      max_bytes=0, tokens=MESSAGE_OVERHEAD_TOKENS + counter(text), supersedes=supersedes)


RenderedReads = MutableMapping[tuple[bytes, bool, int, str, bool], str]
"""First-read texts a caller keeps across calls, by (raw bytes' sha256, view, max bytes, citation, compact)."""


def _read_text(raw: bytes, view: bool, max_bytes: int, cite: str, compact: bool,
               rendered: RenderedReads | None) -> str:
    """A first read's text: the raw result (compact when shorter) whole within ``max_bytes``, or its view.

    An epoch appends the same results call after call, and a large structured one costs tens of
    milliseconds to compact and view each time; ``rendered``, when the caller keeps one, holds each
    rendering by the raw bytes' digest. The text depends on nothing else, so it is the same either way.
    """
    key = (hashlib.sha256(raw).digest(), view, max_bytes, cite, compact)
    found = rendered.get(key) if rendered is not None else None
    if found is not None:
        return found
    text = decode_payload(raw)
    if view:
        text = text_view((compact and compact_text(text)) or text, max_bytes, cite)
    else:
        text = bounded(text, max_bytes)
        text = (compact and compact_text(text)) or text
    if rendered is not None:
        rendered[key] = text
    return text


def render_events(
    plan: EventsPlan,
    raw_payloads: Mapping[str, bytes],
    unavailable: Mapping[str, str],
    compact: bool = True,
    rendered: RenderedReads | None = None,
) -> list[ChatMessage]:
    """The planned events as messages, each own tool step followed by its tool results.

    Args:
        plan: from :func:`plan_events`.
        raw_payloads: the raw bytes of ``raw`` results, by artifact id (hash verified by the caller).
        unavailable: artifacts whose bytes could not be read, with the reason.
        compact: send a structured raw result as its compact text (:mod:`policy.compact`) when that is shorter.
        rendered: first-read texts the caller keeps across calls (:data:`RenderedReads`); read and filled here.
    """
    out: list[ChatMessage] = []
    for event in plan.events:
        out.append(event.message)
        for result in event.results:
            text = result.text
            if result.mode in READ_MODES and result.artifact_id is not None:
                if result.artifact_id in raw_payloads:
                    text = _read_text(raw_payloads[result.artifact_id], result.mode == "view", result.max_bytes,
                                      result.cite, compact, rendered)
                elif result.artifact_id in unavailable:
                    text = result.text.replace("raw bytes unavailable",
                                               f"raw bytes unavailable: {unavailable[result.artifact_id]}")
            out.append(ChatMessage(role=MessageRole.TOOL, content=text, tool_call_id=result.native_id))
        out += [ChatMessage(role=MessageRole.USER, content=note) for note in event.notes]
    return out


__all__ = [
    "CONFLICTS_NOTE",
    "ERROR_TEXT",
    "PENDING_TEXT",
    "RenderedReads",
    "SAME_TEXT",
    "STEP_TEXT_CUT",
    "SUMMARY_TEXT",
    "SETTLES_NOTE",
    "SUPERSEDED_TEXT",
    "replaced_by_prefix",
    "SUPERSEDES_NOTE",
    "WITHHELD_TEXT",
    "native_call_id",
    "plan_events",
    "render_events",
]
