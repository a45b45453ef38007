"""Loading the bounded candidate pool one context assembly draws from.

The store decides *what can possibly matter* and bounds it; the policy core
decides what each participant may see. A node is a candidate when it is

* on the lineage: its branch is in the active branch's lineage and its
  ``seq`` is at or before that branch's ``until_seq``; or
* conversation-scoped (``visibility = 'conversation'``); or
* shared with someone (non-empty ``shared_with``).

Every pool is a ``UNION ALL`` of small index range scans, one per lineage
branch plus one over the partial "scope" index, each ``ORDER BY seq DESC
LIMIT n``; the union is cut to ``n`` again. Cost therefore grows with the
limits and the lineage depth, not with the size of the conversation.

Everything is read as of ``snapshot_seq``: nodes after it are excluded, a
tool call's state is the last one at or before it (the pinned pools load and
count calls by that state), memory links to later memories are hidden, a
memory superseded again later names the replacement it had then, its
``resolution`` is the one it had then, and a skill state rewritten later is
read back from its history as the version current then (see
:mod:`store.convert`). User memories belong to the account,
not the conversation: they are read as of the account's user-memory snapshot
(``user_memory_seq``, recorded with each assembly). Loading the same snapshots
again therefore returns the same candidates, with one exception that is
detected rather than hidden: a user memory forgotten since (it is deleted, and
replay does not bring it back; :func:`activities.replay.recompute_assembly`
refuses such an assembly with ``AssemblyNotReplayableError``). One bound
is approximate: the live/superseded split of the tool-memory pool uses the
current ``superseded_seq``, which only matters past ``max_memories``. And
participants carry no ``seq``: all of the conversation's are loaded, a
participant added later included (their rows never change, and an assembly
reads only its own participant's).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from sqlalchemy import ColumnElement, and_, func, or_, select, text, union_all
from sqlalchemy.ext.asyncio import AsyncSession

from policy.enums import UNRESOLVED_STATUSES, ToolCallStatus, VisibilityScope
from policy.records import CandidateSet, Lineage, SkillStateRecord
from store._sql import translate_errors
from store.branches import _lineage_rows
from store.convert import (
    skill_state_at,
    to_artifact,
    to_checkpoint,
    to_message,
    to_participant,
    to_skill_state,
    to_tool_call,
    to_tool_memory,
    to_user_memory,
)
from store.errors import NotFoundError
from store.models import (
    Account,
    Base,
    ContinuationCheckpoint,
    Conversation,
    Message,
    Participant,
    SkillState,
    ToolArtifact,
    ToolCall,
    ToolMemory,
    UserMemory,
)
from store.models.base import LIVE_SCOPE_SQL
from store.models.tools import PINNED_TOOL_CALL_SQL

M = TypeVar("M", bound=Base)

_VISIBLE_IN_CONVERSATION_SQL = "visibility = 'conversation'"


@dataclass(frozen=True)
class CandidateLimits:
    """Upper bounds on each candidate pool (most recent first).

    The pinned pools come on top of the recent ones: records that must not
    fall out of a long conversation just because they are old.
    """

    max_messages: int = 200
    """Most recent transcript messages."""
    max_directives: int = 50
    """Moderator directives, however old (pinned)."""
    max_tool_calls: int = 200
    """Most recent tool calls."""
    max_pinned_tool_calls: int = 100
    """Most recent failed tool calls, however old (pinned); those past it are counted
    (``CandidateSet.unloaded_failed_calls``) and the assembly says so."""
    max_open_tool_calls: int = 1000
    """Open (pending, deferred, retrying) tool calls, however old (pinned, a pool of their own so no number of
    failures pushes one out); those past it are counted (``CandidateSet.unloaded_open_calls``)."""
    max_artifacts: int = 500
    """Most recent artifacts; artifacts the loaded memories cite come on top."""
    max_memories: int = 200
    """Tool memories: live ones first, then superseded ones, most recent first."""
    max_user_memories: int = 100
    """Most recent user memories of the account."""
    max_skill_states: int = 100
    """Most recently written skill states."""
    max_checkpoints: int = 50
    """Most recent continuation checkpoints."""


DEFAULT_LIMITS = CandidateLimits()
"""The limits used when the caller gives none."""


def _lineage_arms(model: type[M], lineage: Lineage, snapshot_seq: int) -> list[ColumnElement[bool]]:
    arms = []
    for step in lineage.steps:
        until = snapshot_seq if step.until_seq is None else min(step.until_seq, snapshot_seq)
        arms.append(and_(model.branch_id == step.branch_id, model.seq <= until))  # type: ignore[attr-defined]
    return arms


def _arms(model: type[M], lineage: Lineage, snapshot_seq: int, wide_sql: str) -> list[ColumnElement[bool]]:
    # The wide arm is literal SQL so it matches the partial index predicate
    # even under a generic (parameterised) plan.
    wide = and_(text(f"({wide_sql})"), model.seq <= snapshot_seq)  # type: ignore[attr-defined]
    return [*_lineage_arms(model, lineage, snapshot_seq), wide]


async def _pool(
    session: AsyncSession,
    account_id: str,
    conversation_id: str,
    model: type[M],
    arms: Sequence[ColumnElement[bool]],
    limit: int,
    *filters: ColumnElement[bool],
) -> list[M]:
    """The ``limit`` most recent rows matching any arm (and every filter), in ``seq`` order."""
    if limit <= 0 or not arms:
        return []
    scope = (model.account_id == account_id, model.conversation_id == conversation_id)  # type: ignore[attr-defined]
    parts = [
        select(model.id, model.seq)  # type: ignore[attr-defined]
        .where(*scope, arm, *filters)
        .order_by(model.seq.desc())  # type: ignore[attr-defined]
        .limit(limit)
        for arm in arms
    ]
    union = union_all(*parts).subquery("arms")
    top = select(union.c.id, union.c.seq).distinct().order_by(union.c.seq.desc()).limit(limit).subquery("top")
    rows = await session.scalars(
        select(model)
        .join(top, model.id == top.c.id)  # type: ignore[attr-defined]
        .where(model.account_id == account_id)  # type: ignore[attr-defined]
        .order_by(model.seq)  # type: ignore[attr-defined]
        .execution_options(populate_existing=True)
    )
    return list(rows)


def _merge(*pools: list[M]) -> list[M]:
    seen: dict[str, M] = {}
    for pool in pools:
        for row in pool:
            seen.setdefault(row.id, row)  # type: ignore[attr-defined]
    return sorted(seen.values(), key=lambda row: row.seq)  # type: ignore[attr-defined]


async def _snapshot(session: AsyncSession, account_id: str, conversation_id: str, up_to_seq: int | None) -> int:
    next_seq = await session.scalar(
        select(Conversation.next_seq).where(Conversation.account_id == account_id, Conversation.id == conversation_id)
    )
    if next_seq is None:
        raise NotFoundError("conversation", conversation_id)
    current = next_seq - 1
    return current if up_to_seq is None else max(0, min(up_to_seq, current))


_OPEN = frozenset(status for status in UNRESOLVED_STATUSES if status is not ToolCallStatus.FAILED)
_FAILED = frozenset({ToolCallStatus.FAILED})
_OPEN_STATUSES = sorted(status.value for status in _OPEN)
_OPEN_CALL_SQL = f"({PINNED_TOOL_CALL_SQL}) AND status IN ({', '.join(repr(s) for s in _OPEN_STATUSES)})"
"""Open calls: the pinned partial index's predicate (so it serves the query), narrowed."""
_FAILED_CALL_SQL = f"({PINNED_TOOL_CALL_SQL}) AND status = 'failed'"
"""Failed calls (a succeeded retry-critical call is resolved: it pins nothing)."""


async def _pinned_calls(
    session: AsyncSession,
    account_id: str,
    conversation_id: str,
    arms: Sequence[ColumnElement[bool]],
    *,
    snapshot_seq: int,
    pinned_sql: str,
    statuses: frozenset[ToolCallStatus],
    limit: int,
) -> tuple[list[ToolCall], int]:
    """The ``limit`` newest calls matching ``pinned_sql`` at the snapshot, and how many more there are.

    ``statuses`` are the statuses ``pinned_sql`` selects, to judge a call updated since the snapshot
    by its state at it when counting the ones past ``limit``.

    A call resolved after the snapshot was still pinned at it, and one that failed after it was not:
    calls updated since are judged by their state at the snapshot, so a replay loads and counts
    what the first assembly did.
    """
    scope = (ToolCall.account_id == account_id, ToolCall.conversation_id == conversation_id, or_(*arms))
    # Calls not updated since the snapshot are pinned at it as they are now (an index range scan); the
    # others (none, unless the graph moved on: a replay, a concurrent write) by their state at it.
    unchanged = await _pool(session, account_id, conversation_id, ToolCall, [or_(*arms)], limit,
                            text(f"({pinned_sql})"), ToolCall.updated_seq <= snapshot_seq)
    updated_since = await session.scalars(select(ToolCall).where(*scope, ToolCall.updated_seq > snapshot_seq))
    changed = [row for row in updated_since if to_tool_call(row, snapshot_seq).status in statuses]
    rows = sorted([*unchanged, *changed], key=lambda row: row.seq)[-limit:] if limit > 0 else []
    if len(unchanged) < limit:
        return rows, max(0, len(unchanged) + len(changed) - len(rows))
    total = await session.scalar(
        select(func.count()).select_from(ToolCall).where(
            *scope, text(f"({pinned_sql})"), ToolCall.updated_seq <= snapshot_seq)
    )
    return rows, max(0, (total or 0) + len(changed) - len(rows))


async def _superseded_at(
    session: AsyncSession,
    account_id: str,
    conversation_id: str,
    memories: Sequence[ToolMemory],
    snapshot_seq: int,
) -> dict[str, str]:
    """``superseded_by`` as of the snapshot, for memories superseded again since.

    A memory superseded on one branch and later on a sibling has its ``superseded_by`` and
    ``superseded_seq`` moved to the later replacement; at the snapshot it was the newest
    replacement written by then, read back from the replacing side (``supersedes``). Nothing is
    queried unless some memory was superseded after the snapshot (replay, or a concurrent write).
    """
    moved = sorted(row.id for row in memories if row.superseded_seq is not None and row.superseded_seq > snapshot_seq)
    if not moved:
        return {}
    found = await session.execute(
        select(ToolMemory.id, ToolMemory.seq, ToolMemory.supersedes).where(
            ToolMemory.account_id == account_id, ToolMemory.conversation_id == conversation_id,
            ToolMemory.seq <= snapshot_seq, ToolMemory.supersedes.overlap(moved),
        ).order_by(ToolMemory.seq)
    )
    newest: dict[str, str] = {}
    for replacement in found:
        for old in replacement.supersedes:
            newest[old] = replacement.id  # in seq order: the last one written by the snapshot wins
    return {old: newest[old] for old in moved if old in newest}


async def user_memory_snapshot(session: AsyncSession, account_id: str) -> int:
    """The account's highest user-memory ``seq`` (0 when it has none): the snapshot an assembly records.

    The account's counter is taken under a row lock until commit, so every user memory up to it is
    committed and visible (as ``seq`` for a conversation, :func:`store._sql.allocate_seq`).

    Raises:
        NotFoundError: no such account.
    """
    next_seq = await session.scalar(select(Account.next_user_seq).where(Account.id == account_id))
    if next_seq is None:
        raise NotFoundError("account", account_id)
    return int(next_seq) - 1


async def _skill_states_at(
    session: AsyncSession,
    account_id: str,
    conversation_id: str,
    lineage: Lineage,
    snapshot_seq: int,
    limit: int,
) -> tuple[SkillStateRecord, ...]:
    """The ``limit`` most recently written skill states as of the snapshot, in ``seq`` order.

    A state rewritten after the snapshot has moved on (its row's ``seq`` is later): it is read back
    from the row's history as the version that was current at the snapshot.
    """
    current = await _pool(session, account_id, conversation_id, SkillState,
                          _arms(SkillState, lineage, snapshot_seq, _VISIBLE_IN_CONVERSATION_SQL), limit)
    states = [to_skill_state(row) for row in current]
    branches = [step.branch_id for step in lineage.steps]
    rewritten = await session.scalars(
        select(SkillState).where(
            SkillState.account_id == account_id, SkillState.conversation_id == conversation_id,
            SkillState.seq > snapshot_seq,
            or_(SkillState.branch_id.in_(branches), text(f"({_VISIBLE_IN_CONVERSATION_SQL})")),
        )
    )
    for row in rewritten:
        state = skill_state_at(row, snapshot_seq)
        if state is not None and _on_lineage_at(state, lineage, snapshot_seq):
            states.append(state)
    states.sort(key=lambda state: state.seq)
    return tuple(states[-limit:]) if limit > 0 else ()


def _on_lineage_at(state: SkillStateRecord, lineage: Lineage, snapshot_seq: int) -> bool:
    """Whether a version read from history matches one of the pool's arms (``_arms``) at the snapshot."""
    if state.visibility is VisibilityScope.CONVERSATION:
        return True
    for step in lineage.steps:
        until = snapshot_seq if step.until_seq is None else min(step.until_seq, snapshot_seq)
        if step.branch_id == state.branch_id and state.seq <= until:
            return True
    return False


@translate_errors
async def load_candidates(
    session: AsyncSession,
    account_id: str,
    conversation_id: str,
    branch_id: str,
    limits: CandidateLimits = DEFAULT_LIMITS,
    *,
    up_to_seq: int | None = None,
    user_memory_seq: int | None = None,
    extra_artifact_ids: Sequence[str] = (),
) -> CandidateSet:
    """Load the candidate pool for a generation on ``branch_id``.

    Args:
        limits: bounds on each pool.
        up_to_seq: load a historical snapshot; the current one when ``None``
            (a value beyond the current ``seq`` is clamped to it).
        user_memory_seq: the account's user-memory snapshot (user memories are account-wide, outside
            the conversation's ``seq``): only those up to it are loaded; the current one when ``None``
            (read it first with :func:`user_memory_snapshot` to record it).
        extra_artifact_ids: artifacts to load whatever their age (e.g. the
            generation's evidence requests); ignored if unknown.

    Returns:
        The candidate set, every tuple in ``seq`` order, with
        ``snapshot_seq`` set to the snapshot read.

    Raises:
        NotFoundError: unknown conversation, or a branch not in it.
        BranchCycleError: the branch's parent chain loops.
    """
    snapshot_seq = await _snapshot(session, account_id, conversation_id, up_to_seq)
    lineage_conversation, lineage = await _lineage_rows(session, account_id, branch_id)
    if lineage_conversation != conversation_id:
        raise NotFoundError("branch", branch_id)
    at = _Slice(session, account_id, conversation_id, lineage, snapshot_seq, limits)
    messages = await _messages(at)
    tool_calls, unloaded_open, unloaded_failed = await _tool_calls(at)
    memories, memory_seqs, superseded_at = await _memories(at)
    artifacts = await _artifacts(at, memories, extra_artifact_ids)
    skill_states = await _skill_states_at(session, account_id, conversation_id, lineage, snapshot_seq,
                                          limits.max_skill_states)
    checkpoints = await _pool(*at.args, ContinuationCheckpoint,
                              _arms(ContinuationCheckpoint, lineage, snapshot_seq, _VISIBLE_IN_CONVERSATION_SQL),
                              limits.max_checkpoints)
    participants = await session.scalars(
        select(Participant)
        .where(Participant.account_id == account_id, Participant.conversation_id == conversation_id)
        .order_by(Participant.created_at, Participant.id)
    )
    user_memories = await _user_memories(at, user_memory_seq)
    return CandidateSet(
        snapshot_seq=snapshot_seq,
        lineage=lineage,
        participants=tuple(to_participant(row) for row in participants),
        messages=tuple(to_message(row) for row in messages),
        tool_calls=tuple(to_tool_call(row, snapshot_seq) for row in tool_calls),
        artifacts=tuple(to_artifact(row) for row in artifacts),
        tool_memories=tuple(to_tool_memory(row, snapshot_seq, memory_seqs, superseded_at.get(row.id))
                            for row in memories),
        user_memories=tuple(to_user_memory(row) for row in reversed(user_memories)),
        skill_states=skill_states,
        checkpoints=tuple(to_checkpoint(row) for row in checkpoints),
        unloaded_open_calls=unloaded_open,
        unloaded_failed_calls=unloaded_failed,
    )


@dataclass(frozen=True)
class _Slice:
    """Where every pool of one load reads: the conversation, the branch's lineage, the snapshot, the bounds."""

    session: AsyncSession
    account_id: str
    conversation_id: str
    lineage: Lineage
    snapshot_seq: int
    limits: CandidateLimits

    @property
    def args(self) -> tuple[AsyncSession, str, str]:
        return self.session, self.account_id, self.conversation_id

    def arms(self, model: type[M], wide_sql: str = LIVE_SCOPE_SQL) -> list[ColumnElement[bool]]:
        return _arms(model, self.lineage, self.snapshot_seq, wide_sql)


async def _messages(at: _Slice) -> list[Message]:
    """The newest messages, and the directives however old (a moderator's rule outlives the window)."""
    recent = await _pool(*at.args, Message, at.arms(Message), at.limits.max_messages)
    directives = await _pool(*at.args, Message, [or_(*at.arms(Message))], at.limits.max_directives,
                             text("is_directive"))
    return _merge(recent, directives)


async def _tool_calls(at: _Slice) -> tuple[list[ToolCall], int, int]:
    """The newest calls, and open and failed calls in pools of their own: failures never push an open call out."""
    arms = at.arms(ToolCall)
    recent = await _pool(*at.args, ToolCall, arms, at.limits.max_tool_calls)
    open_calls, unloaded_open = await _pinned_calls(
        *at.args, arms, snapshot_seq=at.snapshot_seq, pinned_sql=_OPEN_CALL_SQL, statuses=_OPEN,
        limit=at.limits.max_open_tool_calls)
    failed_calls, unloaded_failed = await _pinned_calls(
        *at.args, arms, snapshot_seq=at.snapshot_seq, pinned_sql=_FAILED_CALL_SQL, statuses=_FAILED,
        limit=at.limits.max_pinned_tool_calls)
    return _merge(recent, open_calls, failed_calls), unloaded_open, unloaded_failed


async def _memories(at: _Slice) -> tuple[list[ToolMemory], dict[str, int], dict[str, int]]:
    """Live memories first, superseded ones in what is left; with the seq of every memory they link to."""
    arms = at.arms(ToolMemory)
    live_at_snapshot = or_(ToolMemory.superseded_seq.is_(None), ToolMemory.superseded_seq > at.snapshot_seq)
    live = await _pool(*at.args, ToolMemory, arms, at.limits.max_memories, live_at_snapshot)
    superseded = await _pool(*at.args, ToolMemory, arms, at.limits.max_memories - len(live),
                             ToolMemory.superseded_seq <= at.snapshot_seq)
    memories = _merge(live, superseded)
    memory_seqs = {row.id: row.seq for row in memories}
    superseded_at = await _superseded_at(*at.args, memories, at.snapshot_seq)
    linked = {m for row in memories for m in (*row.conflicts_with, *row.supersedes)} - memory_seqs.keys()
    if linked:
        found = await at.session.execute(
            select(ToolMemory.id, ToolMemory.seq).where(
                ToolMemory.account_id == at.account_id, ToolMemory.id.in_(sorted(linked))
            )
        )
        memory_seqs.update({row.id: row.seq for row in found})
    return memories, memory_seqs, superseded_at


async def _artifacts(at: _Slice, memories: Sequence[ToolMemory], extra_ids: Sequence[str]) -> list[ToolArtifact]:
    """The newest artifacts, and every artifact a loaded memory cites or the caller asks for, however old."""
    recent = await _pool(*at.args, ToolArtifact, at.arms(ToolArtifact), at.limits.max_artifacts)
    cited = {a for row in memories for a in row.source_artifact_ids}
    cited |= {loc["artifact_id"] for row in memories for loc in row.locators if "artifact_id" in loc}
    cited |= set(extra_ids)
    cited -= {row.id for row in recent}
    if not cited:
        return _merge(recent)  # in seq order, as every pool leaves here
    older = await at.session.scalars(
        select(ToolArtifact).where(
            ToolArtifact.account_id == at.account_id,
            ToolArtifact.conversation_id == at.conversation_id,
            ToolArtifact.id.in_(sorted(cited)),
            ToolArtifact.seq <= at.snapshot_seq,
        )
    )
    return _merge(recent, list(older))


async def _user_memories(at: _Slice, user_memory_seq: int | None) -> list[UserMemory]:
    """The account's newest user memories up to its user-memory snapshot (read now when not given)."""
    if user_memory_seq is None:
        user_memory_seq = await user_memory_snapshot(at.session, at.account_id)
    return list(
        await at.session.scalars(
            select(UserMemory)
            .where(UserMemory.account_id == at.account_id, UserMemory.seq <= user_memory_seq)
            .order_by(UserMemory.seq.desc())
            .limit(at.limits.max_user_memories)
        )
    )


__all__ = ["DEFAULT_LIMITS", "CandidateLimits", "load_candidates", "user_memory_snapshot"]
