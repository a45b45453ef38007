"""What the inspector's pages show, read through the account-scoped store.

Every function takes the viewer's account id and reads only with it: a
foreign id raises the store's :class:`~store.errors.NotFoundError`, exactly
as an unknown one does, and the pages turn both into the same 404. Nothing
here writes.

The results are plain dataclasses of store and policy records; templates
render them with autoescaping on, so tool text arrives as data.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

from activities.deps import GraphDeps
from policy.payloads import decode_payload
from policy.enums import DecisionOutcome, MessageRole, PrivacyClass
from policy.legacy import legacy_messages
from policy.records import (
    ArtifactRecord,
    ChatMessage,
    MessageRecord,
    ParticipantRecord,
    PolicyDecisionRecord,
    ToolCallRecord,
    ToolMemoryRecord,
)
from store import branches, conversations, messages
from store import tools as tool_store
from store.assemblies import get_context_assembly
from store.candidates import load_candidates
from store.errors import ArtifactStoreError, NotFoundError
from store.payloads import read_artifact_payload
from store.provenance import get_record, walk_provenance
from store.records import BranchRecord, ConversationRecord, ModelRunRecord, StoredContextAssembly

RAW_SHOWN_BYTES = 16 * 1024
"""Most raw artifact bytes a page shows; the rest is counted, not shown."""

REPLAY_SHOWN_CHARS = 4000
"""Most characters of one replayed message shown beside the assembled context."""

WITHHELD_RAW = frozenset({PrivacyClass.SECRET_ADJACENT})
"""Privacy classes whose raw artifact bytes no page shows by default: a placeholder names the class and the size.
An artifact's own page shows them to a viewer whose token may reveal (``dossier inspector --url --reveal``) when
asked (``?reveal=1``), and logs each reveal; the replay column of a run page never does."""

RECORD_KINDS = ("memory", "artifact", "tool_call", "message")
"""Record kinds with a provenance page (``/records/<kind>/<id>``); model runs have their own page."""

logger = logging.getLogger(__name__)

INCLUDED = frozenset({DecisionOutcome.INCLUDED, DecisionOutcome.REHYDRATED, DecisionOutcome.PROTECTED})
"""Decision outcomes that put their subject into the context."""


def check_uuid(value: str, kind: str) -> str:
    """An id in canonical form; anything else is not found, like an id of another account.

    Raises:
        NotFoundError: not a UUID.
    """
    try:
        return str(uuid.UUID(value))
    except (ValueError, TypeError, AttributeError):
        raise NotFoundError(kind, "?") from None


# --------------------------------------------------------------------------- conversations


@dataclass(frozen=True)
class BranchNode:
    """A branch in its conversation's tree, with its depth under the root."""

    branch: BranchRecord
    depth: int


@dataclass(frozen=True)
class TranscriptLine:
    """One message of the human transcript."""

    message: MessageRecord
    speaker: str


@dataclass(frozen=True)
class ConversationView:
    """A conversation: its branch tree, one branch's transcript and every model run."""

    conversation: ConversationRecord
    tree: list[BranchNode]
    branch: BranchRecord
    participants: dict[str, ParticipantRecord]
    transcript: list[TranscriptLine]
    runs: list[ModelRunRecord]


async def conversation_list(deps: GraphDeps, account_id: str) -> list[ConversationRecord]:
    """The account's conversations, newest first."""
    async with deps.sessions() as session:
        return await conversations.list_conversations(session, account_id, limit=200)


def branch_tree(found: list[BranchRecord]) -> list[BranchNode]:
    """Branches in depth-first order from the root(s), each with its depth."""
    children: dict[str | None, list[BranchRecord]] = {}
    ids = {b.id for b in found}
    for branch in sorted(found, key=lambda b: (b.created_at, b.id)):
        parent = branch.parent_branch_id if branch.parent_branch_id in ids else None
        children.setdefault(parent, []).append(branch)
    out: list[BranchNode] = []
    stack = [(b, 0) for b in reversed(children.get(None, []))]
    while stack:
        branch, depth = stack.pop()
        out.append(BranchNode(branch, depth))
        stack.extend((c, depth + 1) for c in reversed(children.get(branch.id, [])))
    return out


async def conversation_view(deps: GraphDeps, account_id: str, conversation_id: str,
                            branch_id: str | None = None) -> ConversationView:
    """A conversation with the transcript of ``branch_id`` (default: its root branch).

    Raises:
        NotFoundError: an unknown or foreign conversation, or a branch not in it.
    """
    conversation_id = check_uuid(conversation_id, "conversation")
    async with deps.sessions() as session:
        conversation = await conversations.get_conversation(session, account_id, conversation_id)
        found = await branches.list_branches(session, account_id, conversation.id)
        wanted = check_uuid(branch_id, "branch") if branch_id else conversation.root_branch_id
        branch = next((b for b in found if b.id == wanted), None)
        if branch is None:
            raise NotFoundError("branch", wanted)
        participants = {p.id: p for p in await conversations.list_participants(session, account_id, conversation.id)}
        loaded = await load_candidates(session, account_id, conversation.id, branch.id, deps.limits)
        runs = await messages.list_model_runs(session, account_id, conversation.id)
    on_lineage = [m for m in loaded.messages if loaded.lineage.contains(m.branch_id, m.seq)]
    transcript = [TranscriptLine(m, speaker(m, participants)) for m in sorted(on_lineage, key=lambda m: m.seq)]
    return ConversationView(conversation, branch_tree(found), branch, participants, transcript, runs)


def speaker(message: MessageRecord, participants: dict[str, ParticipantRecord]) -> str:
    """Who a transcript message is from, as the transcript shows it."""
    if message.speaker_label:
        return message.speaker_label
    if message.role is MessageRole.ASSISTANT:
        author = participants.get(message.author_participant_id or "")
        return author.name if author else "assistant"
    return message.role.value


# --------------------------------------------------------------------------- model runs


@dataclass(frozen=True)
class ShownMessage:
    """A provider message as a page shows it: role, text (possibly cut) and its tool calls."""

    role: str
    text: str
    cut_chars: int = 0
    """Characters of ``text`` not shown."""
    tool_calls: tuple[str, ...] = ()
    tool_call_id: str | None = None


@dataclass(frozen=True)
class RunView:
    """A model run with what its model saw, what replay would have sent, and every decision."""

    run: ModelRunRecord
    participant: ParticipantRecord
    assembly: StoredContextAssembly | None
    assembled: list[ShownMessage]
    replay: list[ShownMessage]
    included: list[PolicyDecisionRecord]
    omitted: list[PolicyDecisionRecord]
    noted: list[PolicyDecisionRecord]
    replay_note: str = ""
    """Why the replay column is incomplete, if it is."""
    siblings: list[ModelRunRecord] = field(default_factory=list)
    """The other runs of the conversation (for a diff)."""


def _shown(role: str, content: Any, *, tool_calls: Any = (), tool_call_id: str | None = None,
           limit: int | None = None) -> ShownMessage:
    text = content if isinstance(content, str) else ("" if content is None else str(content))
    cut = 0
    if limit is not None and len(text) > limit:
        text, cut = text[:limit], len(text) - limit
    calls = tuple(_call_line(c) for c in tool_calls or ())
    return ShownMessage(role=role, text=text, cut_chars=cut, tool_calls=calls, tool_call_id=tool_call_id)


def _call_line(call: Any) -> str:
    if isinstance(call, dict):  # an OpenAI-format tool call as stored with the assembly
        function = call.get("function") or {}
        return f"{call.get('id', '')} {function.get('name', call.get('name', ''))}({function.get('arguments', '')})"
    return f"{call.call_id} {call.name}({call.arguments})"


def _stored_messages(stored: tuple[dict[str, Any], ...] | None) -> list[ShownMessage]:
    return [_shown(str(m.get("role", "")), m.get("content"), tool_calls=m.get("tool_calls") or (),
                   tool_call_id=m.get("tool_call_id")) for m in stored or ()]


def _chat_messages(chat: list[ChatMessage]) -> list[ShownMessage]:
    return [_shown(m.role.value, m.content, tool_calls=m.tool_calls, tool_call_id=m.tool_call_id,
                   limit=REPLAY_SHOWN_CHARS) for m in chat]


async def run_view(deps: GraphDeps, account_id: str, model_run_id: str, *, reveal: bool = False) -> RunView:
    """A model run, its stored assembly and the legacy replay of the same snapshot.

    The replay column is :func:`policy.legacy.legacy_messages` over the candidates
    at the assembly's snapshot, with raw results read (and hash-checked) from
    the store, each message cut at :data:`REPLAY_SHOWN_CHARS` for display.

    Raises:
        NotFoundError: an unknown or foreign run.
    """
    model_run_id = check_uuid(model_run_id, "model_run")
    async with deps.sessions() as session:
        run = await messages.get_model_run(session, account_id, model_run_id)
        participant = await conversations.get_participant(session, account_id, run.participant_id)
        siblings = [r for r in await messages.list_model_runs(session, account_id, run.conversation_id)
                    if r.id != run.id]
        if run.context_assembly_id is None:
            return RunView(run, participant, None, [], [], [], [], [], "this run has no stored assembly",
                           siblings)
        assembly = await get_context_assembly(session, account_id, run.context_assembly_id, with_messages=True)
        loaded = await load_candidates(session, account_id, assembly.conversation_id, assembly.branch_id,
                                       deps.limits, up_to_seq=assembly.record.snapshot_seq)
        # Only the results replay sends: those of the tool calls written in the lineage's messages.
        replayed_calls = {call.call_id for m in loaded.messages if loaded.lineage.contains(m.branch_id, m.seq)
                          for call in m.tool_calls}
        raw: dict[str, str] = {}
        for artifact in (a for a in loaded.artifacts if a.call_id in replayed_calls):
            if artifact.privacy in WITHHELD_RAW:
                raw[artifact.id] = f"[{withheld_note(artifact)}; its artifact page can reveal them]"
                continue
            try:
                raw[artifact.id] = decode_payload(
                    await read_artifact_payload(session, deps.artifacts, account_id, artifact.id))
            except ArtifactStoreError as error:
                raw[artifact.id] = f"[raw payload unreadable: {type(error).__name__}]"
    replayed = next((p for p in loaded.participants if p.id == participant.id), participant)
    # The replay column never shows a withheld class's output: its raw bytes above, its calls' errors here.
    plain = loaded.model_copy(update={"tool_calls": tuple(
        call.model_copy(update={"last_error": withheld_text(call.privacy)})
        if call.privacy in WITHHELD_RAW and call.last_error else call for call in loaded.tool_calls)})
    replay = _chat_messages(legacy_messages(plain, replayed, raw))
    decisions = list(assembly.decisions)
    assembled = _stored_messages(assembly.messages)
    withheld = {record.id: record.privacy for record in (*loaded.tool_calls, *loaded.artifacts,
                                                         *loaded.tool_memories) if record.privacy in WITHHELD_RAW}
    secret = sorted({withheld[ref] for d in decisions if d.outcome not in (DecisionOutcome.OMITTED, DecisionOutcome.DENIED)
                     and (ref := d.subject_ref.split(":", 1)[-1]) in withheld})
    if secret and not reveal:
        # What the model saw holds a withheld class's output (a local route may send it): shown on request.
        assembled = [ShownMessage(role="withheld", text=withheld_text(secret[0]))]
    note = ""
    if len(loaded.messages) >= deps.limits.max_messages:
        note = f"replay shows the {deps.limits.max_messages} most recent messages of the lineage"
    return RunView(
        run=run, participant=participant, assembly=assembly, assembled=assembled,
        replay=replay, included=[d for d in decisions if d.outcome in INCLUDED],
        omitted=[d for d in decisions if d.outcome not in INCLUDED and d.outcome is not DecisionOutcome.NOTED],
        noted=[d for d in decisions if d.outcome is DecisionOutcome.NOTED], replay_note=note, siblings=siblings,
    )


async def owns_assembly(deps: GraphDeps, account_id: str, run_or_assembly_id: str) -> bool:
    """Whether the id is a model run with a stored assembly, or a stored assembly, of the account."""
    async with deps.sessions() as session:
        try:
            run = await messages.get_model_run(session, account_id, run_or_assembly_id)
        except NotFoundError:
            try:
                await get_context_assembly(session, account_id, run_or_assembly_id)
            except NotFoundError:
                return False
            return True
    return run.context_assembly_id is not None


# --------------------------------------------------------------------------- provenance


@dataclass(frozen=True)
class RawBytes:
    """An artifact's raw payload as a page may show it: decoded, cut, counted."""

    text: str
    total_bytes: int
    shown_bytes: int
    error: str | None = None
    withheld: str | None = None
    """The privacy class whose bytes are not shown (:data:`WITHHELD_RAW`), when they are not."""
    revealed: bool = False
    """Bytes of a withheld class, shown on the viewer's explicit request."""


def withheld_text(privacy: PrivacyClass) -> str:
    """What a page shows a plain viewer instead of text derived from a withheld class's output."""
    return f"[withheld: {privacy.value} content; a viewer who may reveal sees it with ?reveal=1]"


def for_viewer(found: Provenance) -> Provenance:
    """The one rule for a plain viewer: a record of a :data:`WITHHELD_RAW` class shows its ids, names,
    status, class and sizes; every text that comes from what its tool returned (the raw bytes, a failed
    call's error and each attempt's, a memory's summary and payload) is withheld. A viewer who may reveal
    and asks (``?reveal=1``) sees it, as for the raw bytes."""
    calls = {call.id: call for call in found.tool_calls}
    found.tool_calls = [call.model_copy(update={"last_error": withheld_text(call.privacy)})
                        if call.privacy in WITHHELD_RAW and call.last_error else call for call in found.tool_calls]
    if found.kind == "tool_call" and calls.get(found.record_id) is not None:
        call = calls[found.record_id]
        if call.privacy in WITHHELD_RAW:
            found.history = [{**entry, "error": withheld_text(call.privacy)} if entry.get("error") else entry
                             for entry in found.history]
    memory = found.memory
    if memory is not None and memory.privacy in WITHHELD_RAW:
        found.memory = memory.model_copy(update={"summary": withheld_text(memory.privacy), "payload": {}})
    return found


def withheld_note(artifact: ArtifactRecord) -> str:
    """What a page says instead of a withheld raw payload: its class and size."""
    return f"raw bytes withheld: {artifact.privacy.value}, {artifact.result_bytes:,} bytes"


@dataclass
class Provenance:
    """A record and the chain it comes from: memory -> artifact -> tool call -> model run -> branch -> participant."""

    kind: str
    record_id: str
    memory: ToolMemoryRecord | None = None
    artifacts: list[ArtifactRecord] = field(default_factory=list)
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    message: MessageRecord | None = None
    runs: list[ModelRunRecord] = field(default_factory=list)
    branch: BranchRecord | None = None
    participants: list[ParticipantRecord] = field(default_factory=list)
    raw: RawBytes | None = None
    """The artifact's bytes, on an artifact's own page."""
    arguments: dict[str, Any] | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    """A tool call's attempts."""


async def raw_bytes(deps: GraphDeps, session: Any, account_id: str, artifact: ArtifactRecord, *,
                    reveal: bool = False) -> RawBytes:
    """The first :data:`RAW_SHOWN_BYTES` of an artifact's verified payload, decoded for display.

    Bytes that fail their hash or are gone are reported, never shown. Bytes of a :data:`WITHHELD_RAW` class
    are not read unless ``reveal`` (the viewer may and asked to); a reveal is logged.
    """
    withheld = artifact.privacy in WITHHELD_RAW
    if withheld and not reveal:
        return RawBytes("", artifact.result_bytes, 0, withheld=artifact.privacy.value)
    try:
        payload = await read_artifact_payload(session, deps.artifacts, account_id, artifact.id)
    except ArtifactStoreError as error:
        return RawBytes("", artifact.result_bytes, 0, error=type(error).__name__)
    if withheld:
        logger.warning("inspector: account %s revealed the %s raw bytes of artifact %s (%d bytes)", account_id,
                       artifact.privacy.value, artifact.id, len(payload))
    shown = payload[:RAW_SHOWN_BYTES]
    return RawBytes(shown.decode("utf-8", errors="replace"), len(payload), len(shown), revealed=withheld)


async def provenance(deps: GraphDeps, account_id: str, kind: str, record_id: str, *,
                     reveal: bool = False) -> Provenance:
    """A record's provenance chain down to the raw artifact.

    Args:
        kind: one of :data:`RECORD_KINDS`.
        reveal: show an artifact's raw bytes even of a :data:`WITHHELD_RAW` class (logged).

    Raises:
        NotFoundError: an unknown kind, or an unknown or foreign record.
    """
    if kind not in RECORD_KINDS:
        raise NotFoundError(kind, "?")
    record_id = check_uuid(record_id, kind)
    found = Provenance(kind=kind, record_id=record_id)
    async with deps.sessions() as session:
        # The chain is the audit's (store.provenance); the page adds what only it shows (raw bytes, arguments,
        # attempts, a tool call's own artifact) and reads any record the walk did not reach (raising if gone).
        chain = await walk_provenance(session, account_id, kind, record_id)

        async def record(of_kind: str, one_id: str) -> Any:
            reached = chain.get(of_kind, one_id)
            return reached if reached is not None else await get_record(session, account_id, of_kind, one_id)

        branch_id: str | None = None
        run_ids: list[str] = []
        participant_ids: list[str] = []
        if kind == "memory":
            found.memory = chain.get(kind, record_id)
            # Source artifacts gone (deleted by retention) are not in the chain: the memory's resolution says so.
            found.artifacts = chain.of_kind("artifact")
            branch_id = found.memory.branch_id
            participant_ids.append(found.memory.owner_participant_id)
            run_ids.append(found.memory.model_run_id or "")
        elif kind == "artifact":
            artifact = chain.get(kind, record_id)
            found.artifacts.append(artifact)
            found.raw = await raw_bytes(deps, session, account_id, artifact, reveal=reveal)
            found.arguments = await tool_store.get_artifact_arguments(session, account_id, artifact.id)
            branch_id = artifact.branch_id
        elif kind == "tool_call":
            call = chain.get(kind, record_id)
            found.tool_calls.append(call)
            found.history = await tool_store.get_tool_call_history(session, account_id, call.id)
            try:
                found.artifacts.append(await tool_store.get_artifact_for_tool_call(session, account_id, call.id))
            except NotFoundError:
                pass  # still open, or failed before a result was captured
            branch_id = call.branch_id
        else:
            found.message = chain.get(kind, record_id)
            branch_id = found.message.branch_id
            participant_ids.append(found.message.author_participant_id or "")
            run_ids.append(found.message.model_run_id or "")
        for artifact in found.artifacts:
            if kind != "tool_call":
                found.tool_calls.append(await record("tool_call", artifact.tool_call_id))
            participant_ids.append(artifact.owner_participant_id)
        for call in found.tool_calls:
            run_ids.append(call.model_run_id or "")
            participant_ids.append(call.participant_id)
        for run_id in dict.fromkeys(r for r in run_ids if r):
            found.runs.append(await record("model_run", run_id))
        found.branch = await record("branch", branch_id)
        for participant_id in dict.fromkeys(p for p in participant_ids if p):
            found.participants.append(await record("participant", participant_id))
    return found if reveal else for_viewer(found)


def record_link(subject_ref: str) -> tuple[str, str] | None:
    """``(kind, id)`` of a decision's subject when it has a provenance page."""
    kind, _, record_id = subject_ref.partition(":")
    if kind in RECORD_KINDS and record_id:
        return kind, record_id
    return None


__all__ = ["RAW_SHOWN_BYTES", "RECORD_KINDS", "WITHHELD_RAW", "withheld_note", "BranchNode", "ConversationView", "Provenance", "RawBytes", "RunView",
           "ShownMessage", "TranscriptLine", "branch_tree", "check_uuid", "conversation_list", "conversation_view",
           "owns_assembly", "provenance", "record_link", "run_view", "speaker"]
