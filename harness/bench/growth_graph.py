"""Building the growth benchmark's conversations, through the store's own writers.

One conversation per configuration, in a fresh account: accounts,
conversations, participants and branch forks through the single-row store
functions; each branch's turns through one :class:`store.bulk.GraphBatch`,
queued in the live order of an exchange (user message, assistant message
with its tool calls, then per call: tool call, artifact, the call's final
update, memory; then the answer); user memories, skill states and
checkpoints through their single-row functions. The store allocates every
``seq``; nothing here knows a table or a column.
"""

from __future__ import annotations

import random
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from activities.deps import GraphDeps
from policy.derive import memory_record
from policy.payloads import decode_payload
from policy.enums import MessageRole, PrivacyClass, RuntimeKind, ToolCallStatus, VisibilityScope
from policy.records import ToolCallRequest, canonical_json
from store import bulk
from store.branches import fork_branch, load_lineage
from store.checkpoints import put_checkpoint
from store.conversations import add_participant, create_account, create_conversation
from store.models import (
    Branch,
    ContinuationCheckpoint,
    Message,
    ModelRun,
    Participant,
    SkillState,
    ToolArtifact,
    ToolCall,
    ToolMemory,
    UserMemory,
)
from store.skills import put_skill_state
from store.tools import ArtifactCapture
from store.user_memories import put_user_memory
from store.writes import NewMessage, NewToolCall

from harness.bench.growth_data import T0, TURN_SECONDS, WORDS, ResultCache, ToolResult, sentence

FORK_FRACTION = 0.85
"""Branch ``b`` forks from ``b - 1`` at the user message 85% into ``b - 1``'s own turns:
the remaining 15% are a sibling tail, off the active lineage."""

ANALYZED = (Message, ToolCall, ToolArtifact, ToolMemory, Branch, Participant, SkillState, ContinuationCheckpoint,
            UserMemory, ModelRun)
"""The tables given planner statistics after loading."""


@dataclass(frozen=True)
class GrowthConfig:
    """One point of the grid."""

    size: int
    """Tool artifacts in the conversation (each with its tool call and memory)."""
    branches: int
    participants: int
    """Including the user; the others are assistants taking turns."""


@dataclass
class LoadedHistory:
    """What the loader wrote, and where to assemble."""

    account_id: str
    conversation_id: str
    active_branch_id: str
    participant_id: str
    now: datetime
    counts: dict[str, int]
    lineage_depth: int
    lineage_artifacts: int
    payload_bytes: int
    load_seconds: float


def _plan(config: GrowthConfig, rng: random.Random) -> tuple[list[int], list[list[int]], list[int]]:
    """Tool calls per turn, each branch's turns, and the turn each branch forks at.

    Turns are spread over the branches in order. Branch ``b > 0`` forks from
    ``b - 1`` at the user message of ``b - 1``'s turn at :data:`FORK_FRACTION`,
    or at ``b - 1``'s own fork point when it has no turns; branch 0 always has
    turn 0, so every fork point exists.
    """
    calls_per_turn: list[int] = []
    remaining = config.size
    while remaining > 0:
        k = min(remaining, rng.choice((1, 1, 2, 2, 3)))
        calls_per_turn.append(k)
        remaining -= k
    turns = len(calls_per_turn)
    per_branch: list[list[int]] = [[] for _ in range(config.branches)]
    for t in range(turns):
        per_branch[t * config.branches // turns].append(t)
    fork_turn = [0] * config.branches
    for b in range(config.branches - 1):
        own = per_branch[b]
        fork_turn[b + 1] = own[min(len(own) - 1, int(len(own) * FORK_FRACTION))] if own else fork_turn[b]
    return calls_per_turn, per_branch, fork_turn


def _visibility(i: int, t: int, assistants: list[str]) -> tuple[VisibilityScope, list[str]]:
    roll = (i * 2654435761) % 100
    if roll < 10:
        return VisibilityScope.PARTICIPANT_PRIVATE, []
    if roll < 17:
        return VisibilityScope.CONVERSATION, []
    if roll < 20 and len(assistants) > 1:
        return VisibilityScope.BRANCH, [assistants[(t + 1) % len(assistants)]]
    return VisibilityScope.BRANCH, []


class _Turns:
    """Queues turns into a branch's batch and keeps what the report needs."""

    def __init__(self, cache: ResultCache, rng: random.Random, user_id: str, assistants: list[str]) -> None:
        self.cache, self.rng, self.user_id, self.assistants = cache, rng, user_id, assistants
        self.index = 0
        self.payload_bytes = 0
        self.superseded = 0
        self.user_messages: dict[int, str] = {}
        self.artifacts: list[tuple[str, str]] = []
        """``(branch_id, artifact_id)`` of every artifact."""
        self._live: dict[tuple[str, str], tuple[str, bool]] = {}
        """Per (branch, subject): the live memory and whether it records a failure."""

    def queue(self, batch: bulk.GraphBatch, t: int, branch_id: str, calls: int) -> None:
        owner = self.assistants[t % len(self.assistants)]
        at = T0 + timedelta(seconds=TURN_SECONDS * t)
        run = batch.start_model_run(branch_id, owner, provider="scripted", model="bench-model",
                                    runtime_kind=RuntimeKind.CHAT, model_run_id=str(uuid.uuid4()))
        self.user_messages[t] = batch.append_message(
            NewMessage(
                branch_id=branch_id, role=MessageRole.USER,
                content=f"Turn {t}: {sentence(self.rng, self.rng.randint(6, 30))}", author_participant_id=self.user_id,
                message_id=str(uuid.uuid4())))
        items = [self.cache[self.index + k] for k in range(calls)]
        call_ids = [f"call_{uuid.uuid4().hex[:24]}" for _ in items]
        batch.append_message(
            NewMessage(
                branch_id=branch_id, role=MessageRole.ASSISTANT, content="", author_participant_id=owner,
                model_run_id=run, tool_calls=[ToolCallRequest(call_id=cid, name=item.tool, arguments=item.arguments)
                        for cid, item in zip(call_ids, items, strict=True)], message_id=str(uuid.uuid4())))
        for call_id, item in zip(call_ids, items, strict=True):
            self._exchange(batch, t, branch_id, owner, run, call_id, item, at)
        answer = batch.append_message(
            NewMessage(
                branch_id=branch_id, role=MessageRole.ASSISTANT, content=sentence(self.rng, self.rng.randint(10, 60)),
                author_participant_id=owner, model_run_id=run, message_id=str(uuid.uuid4())))
        batch.finish_model_run(run, status="succeeded", message_id=answer, finished_at=at + timedelta(seconds=5))

    def _exchange(self, batch: bulk.GraphBatch, t: int, branch_id: str, owner: str, run: str, call_id: str,
                  item: ToolResult, at: datetime) -> None:
        i = self.index
        self.index += 1
        visibility, shared = _visibility(i, t, self.assistants)
        privacy = PrivacyClass.PUBLIC if i % 5 == 0 else (PrivacyClass.OAUTH if i % 13 == 0 else PrivacyClass.USER)
        failed = item.status is ToolCallStatus.FAILED
        error = decode_payload(item.payload) if failed else None
        call = batch.record_tool_call(
            NewToolCall(
                branch_id=branch_id, participant_id=owner, call_id=call_id, name=item.tool, arguments=item.arguments,
                model_run_id=run, visibility=visibility, shared_with=shared, privacy=privacy,
                tool_call_id=str(uuid.uuid4()), at=at))
        artifact = batch.insert_artifact(call, ArtifactCapture(
            content_type=item.content_type, sha256=item.sha256, result_bytes=len(item.payload),
            arguments_bytes=len(canonical_json(item.arguments).encode()), storage="inline",
            inline_payload=item.payload, result_tokens=item.tokens, status=item.status, error=error,
            tool_profile=item.tool, provider="scripted", model="bench-model",
            runtime_meta={"result_tokens_exact": True}, tool_version="1", captured_at=at + timedelta(seconds=1),
            artifact_id=str(uuid.uuid4())))
        batch.update_tool_call(call, status=item.status, attempt=3 if failed else 1, error=error,
                               retry_critical=failed and i % 2 == 1, at=at + timedelta(seconds=2))
        self.payload_bytes += len(item.payload)
        self.artifacts.append((branch_id, artifact))
        # What this history has always done: a success supersedes its subject's live memory on the
        # branch, a failure only an earlier failure (links_for, the live rule, also applies scope gates).
        key = (branch_id, item.draft.subject_key)
        previous = self._live.get(key)
        supersedes = (previous[0],) if previous is not None and (not failed or previous[1]) else ()
        self.superseded += len(supersedes)
        record = batch.artifact(artifact)
        memory = memory_record(item.draft_for(artifact, record.captured_at), record, memory_id=str(uuid.uuid4()),
                               supersedes=supersedes)
        self._live[key] = (batch.insert_tool_memory(memory), failed)


async def load_history(deps: GraphDeps, config: GrowthConfig, cache: ResultCache, *, seed: int = 7) -> LoadedHistory:
    """Write one conversation of ``config.size`` artifacts into a fresh account.

    Returns:
        Where to assemble, what was written, and how long it took.
    """
    start = time.perf_counter()
    rng = random.Random(seed * 7919 + config.size * 31 + config.branches * 7 + config.participants)
    cache.ensure(config.size)
    calls_per_turn, per_branch, fork_turn = _plan(config, rng)
    account_id = f"bench-growth-{uuid.uuid4().hex[:12]}"
    branch_ids = [str(uuid.uuid4()) for _ in range(config.branches)]
    user_id = str(uuid.uuid4())
    assistants = [str(uuid.uuid4()) for _ in range(max(1, config.participants - 1))]
    turns = _Turns(cache, rng, user_id, assistants)
    counts = dict.fromkeys(("messages", "tool_calls", "artifacts", "memories", "model_runs"), 0)
    tables = {"messages": "messages", "tool_calls": "tool_calls", "artifacts": "tool_artifacts",
              "memories": "tool_memories", "model_runs": "model_runs"}
    seqs: dict[str, int] = {}
    async with deps.sessions() as session, session.begin():
        await create_account(session, account_id, name="growth benchmark")
        conversation = await create_conversation(session, account_id, title=f"growth {config}",
                                                 root_branch_id=branch_ids[0])
        c = conversation.id
        await add_participant(session, account_id, c, name="user", role="user", participant_id=user_id)
        for k, pid in enumerate(assistants):
            await add_participant(session, account_id, c, name=f"assistant-{k}", provider="scripted",
                                  model="bench-model", participant_id=pid,
                                  system_prompt=f"You are assistant {k} of the Lumen Freight operations team. "
                                                "Cite record ids.")
        for b, branch_id in enumerate(branch_ids):
            if b > 0:
                await fork_branch(session, account_id, c, branch_ids[b - 1], turns.user_messages[fork_turn[b]],
                                  name=f"branch-{b}", branch_id=branch_id)
            batch = bulk.GraphBatch(account_id, c)
            for t in per_branch[b]:
                turns.queue(batch, t, branch_id, calls_per_turn[t])
            if len(batch):
                written = await batch.write(session)
                seqs.update(written.seqs)
                for name, table in tables.items():
                    counts[name] += written.rows[table]
        for _ in range(10):
            await put_user_memory(session, account_id, f"Prefers {rng.choice(WORDS)} reports in EUR.")
        active = branch_ids[-1]
        for k, assistant in enumerate(assistants[:5]):
            await put_skill_state(session, account_id, c, active, assistant, "reporting",
                                  state={"step": k, "format": "table"})
        for k in range(min(20, max(1, len(calls_per_turn) // 500))):
            await put_checkpoint(session, account_id, c, active, assistants[0], "tool_loop", state={"iteration": k})
    async with deps.sessions() as session, session.begin():
        await bulk.analyze(session, *ANALYZED)
        lineage = await load_lineage(session, account_id, active)
    return LoadedHistory(
        account_id=account_id,
        conversation_id=c,
        active_branch_id=active,
        participant_id=assistants[0],
        now=T0 + timedelta(seconds=TURN_SECONDS * (len(calls_per_turn) - 1), minutes=5),
        counts={**{k: counts[k] for k in ("messages", "tool_calls", "artifacts", "memories")},
                "superseded_memories": turns.superseded, "model_runs": counts["model_runs"]},
        lineage_depth=len(lineage.steps),
        lineage_artifacts=sum(1 for branch, artifact in turns.artifacts if lineage.contains(branch, seqs[artifact])),
        payload_bytes=turns.payload_bytes,
        load_seconds=time.perf_counter() - start,
    )


async def delete_history(deps: GraphDeps, account_id: str) -> None:
    """Remove a benchmark account and everything in it (:func:`store.bulk.delete_account`)."""
    async with deps.sessions() as session, session.begin():
        await bulk.delete_account(session, account_id)
