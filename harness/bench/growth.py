"""Benchmark part 4: cost of context assembly as one conversation's history grows.

For every configuration (history size x branch count x participant count) a
fresh account gets one conversation whose history is **bulk loaded** (COPY
through the asyncpg connection under SQLAlchemy): user and assistant messages,
model runs, tool calls with their attempt history, artifacts with inline JSON
or text payloads of 0.5-4 KB, and the tool memories :func:`policy.derive.derive_memory`
derives from them, with the ``seq`` values, supersession links and fork points
the live path (``store.messages``, ``store.tools``, ``store.tool_memories``,
``store.branches``) would have written. Bulk loading is only the setup:
**assembly itself goes through the normal code path**,
:func:`activities.context.assemble_context` (load the bounded candidate pool,
select, render, persist the assembly), and its own timings give the split
between graph query, policy and serialisation.

The baseline is transcript replay as a caller pays for it: walk the lineage,
load every message on it, every tool call and every artifact with its raw
payload, build the legacy replay (:func:`policy.legacy.legacy_messages`) and
count its tokens with the same tiktoken counter.

At the largest size, the candidate-loading SQL of one assembly is captured
(SQLAlchemy ``before_cursor_execute``) and re-run under
``EXPLAIN (ANALYZE, BUFFERS)`` to show which scans it uses.

Benchmarks measure; they never assert timings.

Run: ``python -m harness.bench.growth [--quick] [--out bench-results]``.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import random
import re
import statistics
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import event, select, text

from activities.context import assemble_context
from activities.deps import GraphDeps
from dossier.settings import Settings
from policy.derive import derive_memory
from policy.enums import (
    MessageRole,
    PrivacyClass,
    ResolutionStatus,
    RuntimeKind,
    ToolCallStatus,
    VisibilityScope,
)
from policy.legacy import legacy_messages
from policy.records import (
    ArtifactRecord,
    CandidateSet,
    GenerationBoundary,
    MessageRecord,
    ParticipantRecord,
    ToolCallRecord,
    ToolCallRequest,
    canonical_json,
)
from policy.derive import decode_payload
from policy.tokens import count_message
from policy.tools import ToolSpec
from store.branches import load_lineage
from store.models import Message, ToolArtifact, ToolCall

DEFAULT_SIZES = (100, 1_000, 10_000, 100_000)
DEFAULT_BRANCHES = (1, 20, 200)
DEFAULT_PARTICIPANTS = (2, 20)
QUICK_SIZES = (20, 60)
QUICK_BRANCHES = (1, 3)
QUICK_PARTICIPANTS = (2, 3)

T0 = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)
"""Logical time of the first turn; turns are 30 s apart."""
TURN_SECONDS = 30
FORK_FRACTION = 0.85
"""Branch ``b`` forks from ``b - 1`` at the user message 85% into ``b - 1``'s own turns:
the remaining 15% are a sibling tail, off the active lineage."""


# --------------------------------------------------------------------------- synthetic tool results

_TOOLS: dict[str, ToolSpec] = {
    "orders.query": ToolSpec(name="orders.query", key_args=("region", "status")),
    "ci.logs": ToolSpec(name="ci.logs", freshness="durable", key_args=("job",)),  # type: ignore[arg-type]
    "calendar.list": ToolSpec(name="calendar.list", freshness="volatile", key_args=("day",)),  # type: ignore[arg-type]
    "files.read": ToolSpec(name="files.read", freshness="bounded", key_args=("path",)),  # type: ignore[arg-type]
}
_WORDS = (
    "freight invoice carrier route depot pallet customs delay manifest quote region warehouse driver "
    "capacity lane schedule audit refund ticket escalation shipment backlog forecast margin"
).split()


@dataclass(frozen=True)
class _Result:
    """One precomputed tool exchange (independent of account, branch and ids)."""

    tool: str
    arguments: dict[str, Any]
    status: ToolCallStatus
    content_type: str
    payload: bytes
    sha256: str
    tokens: int
    memory: dict[str, Any]
    """The derived draft, ``model_dump(mode="json")``; locators cite ``"__artifact__"``."""
    stale_offset: float | None
    """``stale_after - observed_at`` in seconds."""


def _sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + "."


def _payload(i: int, rng: random.Random) -> tuple[str, dict[str, Any], ToolCallStatus, str, bytes]:
    kind = i % 4
    if i % 41 == 5:
        tool = ("orders.query", "ci.logs", "calendar.list", "files.read")[kind]
        lines = [f"Traceback (most recent call last):"] + [
            f'  File "/srv/{tool.replace(".", "/")}/handler.py", line {rng.randint(10, 400)}, in step_{k}'
            for k in range(rng.randint(4, 14))
        ]
        lines.append(f"{tool}.UpstreamError: HTTP 503 from upstream after {rng.randint(2, 9)}s (request {i:08x})")
        args = {"job": f"job-{rng.randint(1, 80)}"} if tool == "ci.logs" else {"region": "eu", "status": "open"}
        return tool, args, ToolCallStatus.FAILED, "text/plain", "\n".join(lines).encode()
    if kind == 0:
        args = {"region": rng.choice(["eu", "us", "apac", "latam", "mea"]), "status": rng.choice(["open", "late"])}
        rows = [
            {
                "id": f"ORD-{i}-{k}",
                "customer": f"{rng.choice(_WORDS)}-{rng.randint(1, 999)}",
                "status": rng.choice(["open", "shipped", "late", "held"]),
                "amount": f"{rng.uniform(5, 900):.2f}",
                "currency": "EUR",
                "updated": f"2026-11-{rng.randint(1, 28):02d}",
            }
            for k in range(rng.randint(3, 28))
        ]
        body = {"query": "orders", **args, "rows": rows, "count": len(rows)}
        return "orders.query", args, ToolCallStatus.SUCCEEDED, "application/json", json.dumps(body).encode()
    if kind == 1:
        args = {"job": f"job-{rng.randint(1, 80)}", "ref": f"{rng.getrandbits(28):07x}"}
        lines = [
            f"[{k:04d}] {rng.choice(['INFO', 'INFO', 'INFO', 'WARN'])} {_sentence(rng, rng.randint(4, 9))}"
            for k in range(rng.randint(8, 50))
        ]
        return "ci.logs", args, ToolCallStatus.SUCCEEDED, "text/plain", "\n".join(lines).encode()
    if kind == 2:
        args = {"day": f"2026-11-{rng.randint(1, 30):02d}"}
        events = [
            {
                "id": f"evt-{i}-{k}",
                "title": _sentence(rng, 3),
                "start": f"{args['day']}T{rng.randint(7, 18):02d}:{rng.choice(['00', '30'])}:00Z",
                "attendees": [f"{rng.choice(_WORDS)}@lumen.example" for _ in range(rng.randint(1, 4))],
                "description": _sentence(rng, rng.randint(5, 25)),
            }
            for k in range(rng.randint(1, 12))
        ]
        body = {"day": args["day"], "events": events}
        return "calendar.list", args, ToolCallStatus.SUCCEEDED, "application/json", json.dumps(body).encode()
    args = {"path": f"docs/{rng.choice(_WORDS)}/{rng.randint(1, 400)}.md"}
    paragraphs = [_sentence(rng, rng.randint(12, 40)) for _ in range(rng.randint(2, 9))]
    text_ = f"# {args['path']}\n\n" + "\n\n".join(paragraphs)
    return "files.read", args, ToolCallStatus.SUCCEEDED, "text/markdown", text_.encode()


class _ResultCache:
    """Tool results by index, derived and token-counted once and shared by every configuration."""

    def __init__(self, counter: Callable[[str], int], seed: int) -> None:
        self._counter = counter
        self._seed = seed
        self._items: list[_Result] = []
        self.build_seconds = 0.0

    def ensure(self, n: int) -> None:
        start = time.perf_counter()
        for i in range(len(self._items), n):
            rng = random.Random(self._seed * 1_000_003 + i)
            tool, args, status, content_type, payload = _payload(i, rng)
            draft = derive_memory(
                _TOOLS[tool], "__artifact__", args, status, payload, content_type, T0, parse_max_bytes=8 * 1024 * 1024
            )
            memory = draft.model_dump(mode="json", exclude={"stale_after"})
            offset = None if draft.stale_after is None else (draft.stale_after - T0).total_seconds()
            self._items.append(
                _Result(
                    tool=tool,
                    arguments=args,
                    status=status,
                    content_type=content_type,
                    payload=payload,
                    sha256=hashlib.sha256(payload).hexdigest(),
                    tokens=self._counter(decode_payload(payload)),
                    memory=memory,
                    stale_offset=offset,
                )
            )
        self.build_seconds += time.perf_counter() - start

    def __getitem__(self, i: int) -> _Result:
        return self._items[i]


# --------------------------------------------------------------------------- bulk loader


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
    """What the bulk loader wrote, and where to assemble."""

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


def _rows_dicts(columns: Sequence[str], rows: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    return [dict(zip(columns, row, strict=True)) for row in rows]


@asynccontextmanager
async def _driver(deps: GraphDeps) -> Iterator[Any]:  # type: ignore[misc]
    """A session in a transaction, and its asyncpg connection (for COPY)."""
    async with deps.sessions() as session, session.begin():
        conn = await session.connection()
        raw = await conn.get_raw_connection()
        yield session, raw.driver_connection


async def load_history(
    deps: GraphDeps, config: GrowthConfig, cache: _ResultCache, *, seed: int = 7
) -> LoadedHistory:
    """Bulk load one conversation of ``config.size`` artifacts into a fresh account.

    Every row satisfies the schema's constraints and foreign keys; ``seq``
    follows the live order of one exchange: user message, assistant message
    with its tool calls, then per call: tool call, artifact, the call's final
    update (``updated_seq``, second history entry), memory; then the
    assistant's answer. The conversation counter ends past the last ``seq``.
    """
    start = time.perf_counter()
    rng = random.Random(seed * 7919 + config.size * 31 + config.branches * 7 + config.participants)
    cache.ensure(config.size)
    account_id = f"bench-growth-{uuid.uuid4().hex[:12]}"
    conversation_id = str(uuid.uuid4())
    branch_ids = [str(uuid.uuid4()) for _ in range(config.branches)]
    user_id = str(uuid.uuid4())
    assistants = [str(uuid.uuid4()) for _ in range(max(1, config.participants - 1))]

    # --- plan the turns: tool calls per turn, the branch of each turn.
    calls_per_turn: list[int] = []
    remaining = config.size
    while remaining > 0:
        k = min(remaining, rng.choice((1, 1, 2, 2, 3)))
        calls_per_turn.append(k)
        remaining -= k
    turns = len(calls_per_turn)
    turn_branch = [t * config.branches // turns for t in range(turns)]
    per_branch: list[list[int]] = [[] for _ in range(config.branches)]
    for t, b in enumerate(turn_branch):
        per_branch[b].append(t)
    # Turn order on each branch b > 0: b's own turns; b forks from b-1 at the
    # user message of b-1's turn at FORK_FRACTION (or inherits b-1's fork).
    fork_turn: list[int | None] = [None] * config.branches
    for b in range(config.branches - 1):
        own = per_branch[b]
        if own:
            fork_turn[b + 1] = own[min(len(own) - 1, int(len(own) * FORK_FRACTION))]
        else:
            fork_turn[b + 1] = fork_turn[b]

    seq = 0
    now_ts = T0
    messages: list[tuple[Any, ...]] = []
    runs: list[tuple[Any, ...]] = []
    calls: list[tuple[Any, ...]] = []
    artifacts: list[tuple[Any, ...]] = []
    memories: list[dict[str, Any]] = []
    user_msg_of_turn: dict[int, tuple[str, int]] = {}
    run_message: list[tuple[str, str]] = []
    live_by_subject: dict[tuple[str, str], dict[str, Any]] = {}
    index = 0
    payload_bytes = 0
    for t in range(turns):
        b = turn_branch[t]
        branch_id = branch_ids[b]
        owner = assistants[t % len(assistants)]
        at = T0 + timedelta(seconds=TURN_SECONDS * t)
        now_ts = at
        run_id = str(uuid.uuid4())
        runs.append((run_id, account_id, conversation_id, branch_id, owner, "scripted", "bench-model", "chat",
                     "succeeded", at, at + timedelta(seconds=5)))
        seq += 1
        user_msg = str(uuid.uuid4())
        user_msg_of_turn[t] = (user_msg, seq)
        messages.append((user_msg, account_id, conversation_id, branch_id, seq, "user",
                         f"Turn {t}: {_sentence(rng, rng.randint(6, 30))}", user_id, None, False, None, "branch",
                         [], "[]", at))
        turn_items = [cache[index + k] for k in range(calls_per_turn[t])]
        call_ids = [f"call_{uuid.uuid4().hex[:24]}" for _ in turn_items]
        requests = [
            {"call_id": cid, "name": item.tool, "arguments": item.arguments}
            for cid, item in zip(call_ids, turn_items, strict=True)
        ]
        seq += 1
        messages.append((str(uuid.uuid4()), account_id, conversation_id, branch_id, seq, "assistant", "", owner,
                         None, False, run_id, "branch", [], json.dumps(requests), at))
        for cid, item in zip(call_ids, turn_items, strict=True):
            i = index
            index += 1
            roll = (i * 2654435761) % 100
            if roll < 10:
                visibility, shared = "participant_private", []
            elif roll < 17:
                visibility, shared = "conversation", []
            elif roll < 20 and len(assistants) > 1:
                visibility, shared = "branch", [assistants[(t + 1) % len(assistants)]]
            else:
                visibility, shared = "branch", []
            privacy = "public" if i % 5 == 0 else ("oauth" if i % 13 == 0 else "user")
            failed = item.status is ToolCallStatus.FAILED
            retry_critical = failed and i % 2 == 1
            call_row_id = str(uuid.uuid4())
            call_seq, art_seq, upd_seq, mem_seq = seq + 1, seq + 2, seq + 3, seq + 4
            seq += 4
            history = [{"seq": call_seq, "attempt": 1, "status": "pending", "error": None, "waiting_for": None,
                        "retry_critical": False, "at": at.isoformat()}]
            error = decode_payload(item.payload) if failed else None
            history.append({"seq": upd_seq, "attempt": 3 if failed else 1, "status": item.status.value,
                            "error": error, "waiting_for": None, "retry_critical": retry_critical,
                            "at": (at + timedelta(seconds=2)).isoformat()})
            args_json = json.dumps(item.arguments)
            calls.append((call_row_id, account_id, conversation_id, branch_id, call_seq, run_id, owner, cid,
                          item.tool, args_json, item.status.value, retry_critical, 3 if failed else 1, error, None,
                          visibility, shared, privacy, "chat", json.dumps(history), upd_seq, at,
                          at + timedelta(seconds=2)))
            artifact_id = str(uuid.uuid4())
            payload_bytes += len(item.payload)
            artifacts.append((artifact_id, account_id, conversation_id, call_row_id, cid, item.tool,
                              item.status.value, owner, run_id, "chat", branch_id, art_seq, visibility, shared,
                              privacy, item.content_type, args_json, item.sha256, len(item.payload),
                              len(canonical_json(item.arguments).encode()), item.tokens, "inline", None,
                              item.payload, error, "[]", item.tool, "scripted", "bench-model",
                              json.dumps({"result_tokens_exact": True}), "1", at + timedelta(seconds=1), "none"))
            memory = dict(item.memory)
            memory_id = str(uuid.uuid4())
            memory["locators"] = [{**loc, "artifact_id": artifact_id} for loc in memory["locators"]]
            observed = at + timedelta(seconds=1)
            row = {
                "id": memory_id, "account_id": account_id, "conversation_id": conversation_id,
                "branch_id": branch_id, "seq": mem_seq, "owner_participant_id": owner, "model_run_id": run_id,
                "runtime_kind": "chat", "source_artifact_ids": [artifact_id], "source_tool": item.tool,
                "subject_key": memory["subject_key"], "title": memory["title"], "summary": memory["summary"],
                "payload": json.dumps(memory["payload"]), "confidence": memory["confidence"],
                "confidence_source": memory["confidence_source"], "rationale": memory["rationale"],
                "limitations": memory["limitations"], "visibility": visibility, "shared_with": shared,
                "privacy": privacy, "freshness": memory["freshness"], "observed_at": observed,
                "stale_after": None if item.stale_offset is None else observed + timedelta(seconds=item.stale_offset),
                "revalidate_with": list(memory["revalidate_with"]), "locators": json.dumps(memory["locators"]),
                "resolution": ResolutionStatus.RESOLVED.value, "repair_attempts": 0, "conflicts_with": [],
                "supersedes": [], "superseded_by": None, "superseded_seq": None, "promotion": "none",
                "promoted_from": [], "created_at": observed,
            }
            # store.tool_memories / activities.memory: a success supersedes the subject's
            # live memory; a failure supersedes only an earlier failure.
            key = (branch_id, memory["subject_key"])
            previous = live_by_subject.get(key)
            if previous is not None and (not failed or previous["_failed"]):
                previous["superseded_by"] = memory_id
                previous["superseded_seq"] = mem_seq
                row["supersedes"] = [previous["id"]]
            row["_failed"] = failed
            live_by_subject[key] = row
            memories.append(row)
        seq += 1
        answer_id = str(uuid.uuid4())
        messages.append((answer_id, account_id, conversation_id, branch_id, seq, "assistant",
                         _sentence(rng, rng.randint(10, 60)), owner, None, False, run_id, "branch", [], "[]", at))
        run_message.append((run_id, answer_id))

    # Branch rows: b > 0 forks from b - 1 at the user message of fork_turn[b].
    branch_rows = []
    fork_updates = []
    for b, branch_id in enumerate(branch_ids):
        if b == 0:
            branch_rows.append((branch_id, account_id, conversation_id, None, None, "main"))
            continue
        ft = fork_turn[b]
        if ft is None:  # nothing written anywhere yet: fork at a placeholder user message on the root
            seq += 1
            placeholder = str(uuid.uuid4())
            messages.append((placeholder, account_id, conversation_id, branch_ids[0], seq, "user", "(fork point)",
                             user_id, None, False, None, "branch", [], "[]", T0))
            user_msg_of_turn[-b] = (placeholder, seq)
            ft = -b
            for later in range(b, config.branches):
                if fork_turn[later] is None:
                    fork_turn[later] = ft
        message_id, fork_seq = user_msg_of_turn[ft]
        branch_rows.append((branch_id, account_id, conversation_id, branch_ids[b - 1], fork_seq, f"branch-{b}"))
        fork_updates.append({"m": message_id, "b": branch_id, "a": account_id})

    # A few records of the other pools.
    user_memories = [(str(uuid.uuid4()), account_id, k + 1, f"Prefers {rng.choice(_WORDS)} reports in EUR.", "user")
                     for k in range(10)]
    skill_states = []
    checkpoints = []
    active = branch_ids[-1]
    for k, assistant in enumerate(assistants[:5]):
        seq += 1
        skill_states.append((str(uuid.uuid4()), account_id, conversation_id, active, seq, assistant, "reporting",
                             json.dumps({"step": k, "format": "table"}), "participant_private", "user"))
    for k in range(min(20, max(1, turns // 500))):
        seq += 1
        checkpoints.append((str(uuid.uuid4()), account_id, conversation_id, active, seq, assistants[0], "tool_loop",
                            json.dumps({"iteration": k}), [], "participant_private", "user"))

    for row in memories:
        row.pop("_failed")
    memory_columns = list(memories[0].keys()) if memories else []

    async with _driver(deps) as (session, apg):
        await apg.execute("INSERT INTO accounts (id, name, next_user_seq) VALUES ($1, $2, $3)",
                          account_id, "growth benchmark", len(user_memories) + 1)
        await apg.execute("INSERT INTO conversations (id, account_id, title, next_seq) VALUES ($1, $2, $3, $4)",
                          conversation_id, account_id, f"growth {config}", seq + 1)
        await apg.copy_records_to_table(
            "branches", records=branch_rows,
            columns=["id", "account_id", "conversation_id", "parent_branch_id", "fork_seq", "name"],
        )
        await apg.execute("UPDATE conversations SET root_branch_id = $1 WHERE account_id = $2 AND id = $3",
                          branch_ids[0], account_id, conversation_id)
        participant_rows = [(user_id, account_id, conversation_id, "user", "user", None, None, "", None)] + [
            (pid, account_id, conversation_id, f"assistant-{k}", "assistant", "scripted", "bench-model",
             f"You are assistant {k} of the Lumen Freight operations team. Cite record ids.", None)
            for k, pid in enumerate(assistants)
        ]
        await apg.copy_records_to_table(
            "participants", records=participant_rows,
            columns=["id", "account_id", "conversation_id", "name", "role", "provider", "model", "system_prompt",
                     "parent_participant_id"],
        )
        await apg.copy_records_to_table(
            "model_runs", records=runs,
            columns=["id", "account_id", "conversation_id", "branch_id", "participant_id", "provider", "model",
                     "runtime_kind", "status", "started_at", "finished_at"],
        )
        await apg.copy_records_to_table(
            "messages", records=messages,
            columns=["id", "account_id", "conversation_id", "branch_id", "seq", "role", "content",
                     "author_participant_id", "speaker_label", "is_directive", "model_run_id", "visibility",
                     "shared_with", "tool_calls", "created_at"],
        )
        if fork_updates:
            await apg.executemany(
                "UPDATE branches SET fork_message_id = $1 WHERE account_id = $3 AND id = $2",
                [(u["m"], u["b"], u["a"]) for u in fork_updates],
            )
        await apg.executemany(
            "UPDATE model_runs SET message_id = $2 WHERE account_id = $3 AND id = $1",
            [(r, m, account_id) for r, m in run_message],
        )
        await apg.copy_records_to_table(
            "tool_calls", records=calls,
            columns=["id", "account_id", "conversation_id", "branch_id", "seq", "model_run_id", "participant_id",
                     "call_id", "name", "arguments", "status", "retry_critical", "attempts", "last_error",
                     "waiting_for", "visibility", "shared_with", "privacy", "runtime_kind", "history",
                     "updated_seq", "created_at", "updated_at"],
        )
        await apg.copy_records_to_table(
            "tool_artifacts", records=artifacts,
            columns=["id", "account_id", "conversation_id", "tool_call_id", "call_id", "tool_name", "status",
                     "owner_participant_id", "model_run_id", "runtime_kind", "branch_id", "seq", "visibility",
                     "shared_with", "privacy", "content_type", "arguments", "sha256", "result_bytes",
                     "arguments_bytes", "result_tokens", "storage", "storage_key", "inline_payload", "error",
                     "active_skills", "tool_profile", "provider", "model", "runtime_meta", "tool_version",
                     "captured_at", "promotion"],
        )
        if memories:
            await apg.copy_records_to_table(
                "tool_memories", records=[tuple(row[c] for c in memory_columns) for row in memories],
                columns=memory_columns,
            )
        await apg.copy_records_to_table(
            "user_memories", records=user_memories, columns=["id", "account_id", "seq", "text", "privacy"]
        )
        await apg.copy_records_to_table(
            "skill_states", records=skill_states,
            columns=["id", "account_id", "conversation_id", "branch_id", "seq", "participant_id", "skill", "state",
                     "visibility", "privacy"],
        )
        if checkpoints:
            await apg.copy_records_to_table(
                "continuation_checkpoints", records=checkpoints,
                columns=["id", "account_id", "conversation_id", "branch_id", "seq", "participant_id", "kind",
                         "state", "references", "visibility", "privacy"],
            )
    # What autovacuum would do shortly after a large write: give the planner statistics.
    async with deps.sessions() as session:
        for table in ("messages", "tool_calls", "tool_artifacts", "tool_memories", "branches", "participants",
                      "skill_states", "continuation_checkpoints", "user_memories", "model_runs"):
            await session.execute(text(f"ANALYZE {table}"))
        await session.commit()
        lineage = await load_lineage(session, account_id, active)
    lineage_artifacts = sum(1 for a in artifacts if lineage.contains(a[10], a[11]))
    return LoadedHistory(
        account_id=account_id,
        conversation_id=conversation_id,
        active_branch_id=active,
        participant_id=assistants[0],
        now=now_ts + timedelta(minutes=5),
        counts={
            "messages": len(messages),
            "tool_calls": len(calls),
            "artifacts": len(artifacts),
            "memories": len(memories),
            "superseded_memories": sum(1 for m in memories if m["superseded_by"] is not None),
            "model_runs": len(runs),
        },
        lineage_depth=len(lineage.steps),
        lineage_artifacts=lineage_artifacts,
        payload_bytes=payload_bytes,
        load_seconds=time.perf_counter() - start,
    )


async def delete_history(deps: GraphDeps, account_id: str) -> None:
    """Remove every row of a benchmark account (children first; reference cycles cut by updates)."""
    async with deps.sessions() as session, session.begin():
        params = {"a": account_id}
        await session.execute(text("DELETE FROM policy_decisions WHERE account_id = :a"), params)
        await session.execute(text("UPDATE model_runs SET context_assembly_id = NULL, message_id = NULL "
                                   "WHERE account_id = :a"), params)
        for table in ("context_assemblies", "continuation_checkpoints", "skill_states", "tool_memories",
                      "tool_artifacts", "tool_calls", "user_memories"):
            await session.execute(text(f"DELETE FROM {table} WHERE account_id = :a"), params)
        await session.execute(text("UPDATE branches SET fork_message_id = NULL WHERE account_id = :a"), params)
        await session.execute(text("DELETE FROM messages WHERE account_id = :a"), params)
        await session.execute(text("DELETE FROM model_runs WHERE account_id = :a"), params)
        await session.execute(text("UPDATE conversations SET root_branch_id = NULL WHERE account_id = :a"), params)
        for table in ("branches", "participants", "conversations", "accounts"):
            column = "id" if table == "accounts" else "account_id"
            await session.execute(text(f"DELETE FROM {table} WHERE {column} = :a"), params)


# --------------------------------------------------------------------------- replay baseline


async def replay_transcript(deps: GraphDeps, loaded: LoadedHistory) -> dict[str, float]:
    """Full legacy replay as a caller pays for it: load, build, count.

    Loads the lineage, every message on it, every tool call and every
    artifact of the conversation with its raw payload (SQLAlchemy core rows,
    records built without re-validation: the cheapest honest way), builds the
    replay with :func:`policy.legacy.legacy_messages` and counts its tokens.
    """
    start = time.perf_counter()
    a, c = loaded.account_id, loaded.conversation_id
    async with deps.sessions() as session:
        lineage = await load_lineage(session, a, loaded.active_branch_id)
        msg_rows = (await session.execute(
            select(Message.id, Message.branch_id, Message.seq, Message.role, Message.content,
                   Message.author_participant_id, Message.tool_calls)
            .where(Message.account_id == a, Message.conversation_id == c).order_by(Message.seq)
        )).all()
        call_rows = (await session.execute(
            select(ToolCall.id, ToolCall.call_id, ToolCall.name, ToolCall.status, ToolCall.branch_id, ToolCall.seq,
                   ToolCall.participant_id, ToolCall.last_error, ToolCall.waiting_for)
            .where(ToolCall.account_id == a, ToolCall.conversation_id == c)
        )).all()
        art_rows = (await session.execute(
            select(ToolArtifact.id, ToolArtifact.tool_call_id, ToolArtifact.call_id, ToolArtifact.tool_name,
                   ToolArtifact.status, ToolArtifact.branch_id, ToolArtifact.seq, ToolArtifact.owner_participant_id,
                   ToolArtifact.visibility, ToolArtifact.privacy, ToolArtifact.content_type,
                   ToolArtifact.result_bytes, ToolArtifact.arguments_bytes, ToolArtifact.storage,
                   ToolArtifact.captured_at, ToolArtifact.inline_payload)
            .where(ToolArtifact.account_id == a, ToolArtifact.conversation_id == c)
        )).all()
        system_prompt = await session.scalar(text("SELECT system_prompt FROM participants WHERE account_id = :a "
                                                  "AND id = :p"), {"a": a, "p": loaded.participant_id})
    load_ms = (time.perf_counter() - start) * 1000

    start = time.perf_counter()
    on_lineage = {(r.branch_id, r.seq) for r in msg_rows if lineage.contains(r.branch_id, r.seq)}
    messages = tuple(
        MessageRecord.model_construct(
            id=r.id, branch_id=r.branch_id, seq=r.seq, role=MessageRole(r.role), content=r.content,
            author_participant_id=r.author_participant_id,
            tool_calls=tuple(ToolCallRequest.model_construct(**tc) for tc in r.tool_calls),
        )
        for r in msg_rows if (r.branch_id, r.seq) in on_lineage
    )
    tool_calls = tuple(
        ToolCallRecord.model_construct(
            id=r.id, call_id=r.call_id, name=r.name, arguments={}, status=ToolCallStatus(r.status),
            branch_id=r.branch_id, seq=r.seq, participant_id=r.participant_id, last_error=r.last_error,
            waiting_for=r.waiting_for,
        )
        for r in call_rows
    )
    artifacts = tuple(
        ArtifactRecord.model_construct(
            id=r.id, tool_call_id=r.tool_call_id, call_id=r.call_id, tool_name=r.tool_name,
            status=ToolCallStatus(r.status), branch_id=r.branch_id, seq=r.seq,
            owner_participant_id=r.owner_participant_id, visibility=VisibilityScope(r.visibility),
            privacy=PrivacyClass(r.privacy), content_type=r.content_type, result_bytes=r.result_bytes,
            arguments_bytes=r.arguments_bytes, storage=r.storage, captured_at=r.captured_at,
        )
        for r in art_rows
    )
    raw = {r.id: decode_payload(r.inline_payload) for r in art_rows}
    candidates = CandidateSet.model_construct(
        snapshot_seq=max((r.seq for r in msg_rows), default=0), lineage=lineage, participants=(),
        messages=messages, tool_calls=tool_calls, artifacts=artifacts,
    )
    participant = ParticipantRecord.model_construct(id=loaded.participant_id, name="assistant-0",
                                                    role="assistant", system_prompt=system_prompt or "")
    replay = legacy_messages(candidates, participant, raw)
    build_ms = (time.perf_counter() - start) * 1000

    start = time.perf_counter()
    tokens = sum(count_message(message, deps.counter) for message in replay)
    count_ms = (time.perf_counter() - start) * 1000
    return {
        "load_ms": round(load_ms, 3),
        "build_ms": round(build_ms, 3),
        "count_ms": round(count_ms, 3),
        "total_ms": round(load_ms + build_ms + count_ms, 3),
        "messages": len(replay),
        "tokens": tokens,
    }


# --------------------------------------------------------------------------- EXPLAIN


@dataclass
class ExplainedQuery:
    """One candidate-loading statement under ``EXPLAIN (ANALYZE, BUFFERS)``."""

    label: str
    sql: str
    plan: str
    index_scans: list[str]
    """``"<node> using <index> on <table>"`` for every index-driven node."""
    seq_scans: list[str]
    """Tables read by a Seq Scan."""
    execution_ms: float
    shared_hit: int
    shared_read: int

    @property
    def verdict(self) -> str:
        if self.seq_scans and not self.index_scans:
            return "Seq Scan"
        if self.seq_scans:
            return "Index Scan + Seq Scan"
        return "Index Scan" if self.index_scans else "no table scan"


_SCAN = re.compile(r"(Index Only Scan|Index Scan|Bitmap Index Scan)(?: Backward)? (?:using|on) (\w+)(?: on (\w+))?")
_SEQ = re.compile(r"Seq Scan on (\w+)")
_TABLE = re.compile(r"\bFROM (\w+)", re.IGNORECASE)


def _label(sql: str) -> str:
    low = sql.lower()
    if "with recursive lineage" in low:
        return "lineage (recursive CTE)"
    if "conversations.next_seq" in low:
        return "snapshot seq (conversations)"
    tables = [t for t in _TABLE.findall(sql) if t.lower() not in ("arms", "top")]
    table = tables[0] if tables else "?"
    if table == "messages":
        return "messages: directives (pinned)" if re.search(r"and \(?is_directive", low) else "messages: recent"
    if table == "tool_calls":
        pinned = "or retry_critical" in low
        return "tool_calls: pinned (unresolved/retry-critical)" if pinned else "tool_calls: recent"
    if table == "tool_memories":
        if "union all" not in low:
            return "tool_memories: linked ids"
        return "tool_memories: superseded" if "superseded_seq <=" in low else "tool_memories: live"
    if table == "tool_artifacts":
        return "tool_artifacts: recent" if "union all" in low else "tool_artifacts: cited by memories"
    return table


def _summarise_plan(label: str, sql: str, plan: str) -> ExplainedQuery:
    index_scans = [f"{kind} using {index}" + (f" on {table}" if table else "") for kind, index, table in
                   _SCAN.findall(plan)]
    seq_scans = sorted(set(_SEQ.findall(plan)))
    exec_ms = float(m.group(1)) if (m := re.search(r"Execution Time: ([\d.]+) ms", plan)) else math.nan
    top = next((line for line in plan.splitlines() if "Buffers:" in line), "")
    hit = int(m.group(1)) if (m := re.search(r"hit=(\d+)", top)) else 0
    read = int(m.group(1)) if (m := re.search(r"read=(\d+)", top)) else 0
    return ExplainedQuery(label, sql, plan, index_scans, seq_scans, exec_ms, hit, read)


async def explain_candidate_queries(deps: GraphDeps, loaded: LoadedHistory) -> list[ExplainedQuery]:
    """Capture the SQL of one candidate load and EXPLAIN (ANALYZE, BUFFERS) each SELECT."""
    from store.candidates import load_candidates

    captured: list[tuple[str, Any]] = []

    async with deps.sessions() as session:
        conn = await session.connection()
        sync_engine = conn.sync_engine

        def capture(_conn: Any, _cursor: Any, statement: str, parameters: Any, _ctx: Any, _many: bool) -> None:
            captured.append((statement, parameters))

        event.listen(sync_engine, "before_cursor_execute", capture)
        try:
            await load_candidates(session, loaded.account_id, loaded.conversation_id, loaded.active_branch_id,
                                  deps.limits)
        finally:
            event.remove(sync_engine, "before_cursor_execute", capture)
        out = []
        for statement, parameters in captured:
            if not statement.lstrip().upper().startswith(("SELECT", "WITH")):
                continue
            result = await conn.exec_driver_sql("EXPLAIN (ANALYZE, BUFFERS) " + statement, parameters)
            plan = "\n".join(row[0] for row in result.all())
            out.append(_summarise_plan(_label(statement), statement, plan))
        await session.rollback()
    return out


# --------------------------------------------------------------------------- the run


def _percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (p99 of 30 samples is the maximum)."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def _stats(values: Sequence[float]) -> dict[str, float]:
    return {
        "p50": round(_percentile(values, 50), 3),
        "p99": round(_percentile(values, 99), 3),
        "mean": round(statistics.fmean(values), 3) if values else math.nan,
        "min": round(min(values), 3) if values else math.nan,
        "max": round(max(values), 3) if values else math.nan,
        "n": len(values),
    }


@dataclass
class ConfigResult:
    """Measurements of one configuration."""

    config: GrowthConfig
    counts: dict[str, int]
    lineage_depth: int
    lineage_artifacts: int
    payload_bytes: int
    load_seconds: float
    assembly: dict[str, dict[str, float]]
    """``{"assemble_ms" | "graph_query_ms" | "policy_ms" | "serialise_ms" | "end_to_end_ms": stats}``;
    ``assemble_ms`` = graph query + policy + serialisation; end-to-end adds
    rehydration and persisting the assembly record."""
    candidates: dict[str, int]
    assembled_tokens: int
    legacy_tokens_recorded: int
    replay: dict[str, dict[str, float]]
    """``{"total_ms" | "load_ms" | "build_ms" | "count_ms": stats}``."""
    replay_tokens: int
    replay_messages: int
    explain: list[ExplainedQuery] = field(default_factory=list)


@dataclass
class GrowthReport:
    """The outcome of :func:`run_growth`."""

    results: list[ConfigResult]
    sizes: tuple[int, ...]
    branches: tuple[int, ...]
    participants: tuple[int, ...]
    samples: int
    started_at: str
    run_seconds: float
    precompute_seconds: float
    limits: dict[str, int]
    notes: list[str] = field(default_factory=list)

    # ---- derived numbers

    def result(self, size: int, branches: int, participants: int) -> ConfigResult | None:
        for r in self.results:
            if (r.config.size, r.config.branches, r.config.participants) == (size, branches, participants):
                return r
        return None

    def growth_factors(self, low: int = 1_000, high: int = 100_000) -> list[dict[str, Any]]:
        """p50 assembly time at ``high`` over ``low``, per (branches, participants)."""
        out = []
        for b in self.branches:
            for p in self.participants:
                lo, hi = self.result(low, b, p), self.result(high, b, p)
                if lo is None or hi is None:
                    continue
                f_asm = hi.assembly["assemble_ms"]["p50"] / lo.assembly["assemble_ms"]["p50"]
                f_e2e = hi.assembly["end_to_end_ms"]["p50"] / lo.assembly["end_to_end_ms"]["p50"]
                f_rep = hi.replay["total_ms"]["p50"] / lo.replay["total_ms"]["p50"]
                out.append({"branches": b, "participants": p, "from": low, "to": high,
                            "assemble_p50_factor": round(f_asm, 2), "end_to_end_p50_factor": round(f_e2e, 2),
                            "replay_p50_factor": round(f_rep, 2)})
        return out

    def plot_data(self) -> dict[str, Any]:
        """Series for plots: p50/p99 vs size per (branches, participants), and the stacked split."""
        series = []
        for b in self.branches:
            for p in self.participants:
                rows = sorted((r for r in self.results if (r.config.branches, r.config.participants) == (b, p)),
                              key=lambda r: r.config.size)
                if not rows:
                    continue
                series.append({
                    "label": f"{b} branch(es), {p} participants",
                    "branches": b,
                    "participants": p,
                    "size": [r.config.size for r in rows],
                    "assemble_p50_ms": [r.assembly["assemble_ms"]["p50"] for r in rows],
                    "assemble_p99_ms": [r.assembly["assemble_ms"]["p99"] for r in rows],
                    "end_to_end_p50_ms": [r.assembly["end_to_end_ms"]["p50"] for r in rows],
                    "replay_p50_ms": [r.replay["total_ms"]["p50"] for r in rows],
                    "split_p50_ms": {
                        key: [r.assembly[key]["p50"] for r in rows]
                        for key in ("graph_query_ms", "policy_ms", "serialise_ms")
                    },
                })
        return {"x": "tool artifacts in the conversation", "y": "milliseconds", "series": series}

    def to_json(self) -> str:
        data = {
            "benchmark": "growth",
            "sizes": self.sizes, "branches": self.branches, "participants": self.participants,
            "samples": self.samples, "started_at": self.started_at, "run_seconds": round(self.run_seconds, 1),
            "precompute_seconds": round(self.precompute_seconds, 1), "limits": self.limits, "notes": self.notes,
            "growth_factors": self.growth_factors(),
            "results": [
                {**{k: v for k, v in asdict(r).items() if k != "explain"},
                 "explain": [{**asdict(q), "verdict": q.verdict} for q in r.explain]}
                for r in self.results
            ],
            "plot_data": self.plot_data(),
        }
        return json.dumps(data, indent=2, default=str)

    def to_markdown(self) -> str:
        lines = ["# Cost as the graph grows", ""]
        lines += [f"- {note}" for note in self.notes]
        lines += [
            f"- Grid: sizes {list(self.sizes)} x branches {list(self.branches)} x participants "
            f"{list(self.participants)}; {self.samples} timed assemblies per configuration (after warm-up); "
            f"started {self.started_at}, ran {self.run_seconds:.0f} s "
            f"(of which {self.precompute_seconds:.0f} s deriving/token-counting the synthetic results once).",
            f"- Candidate limits: {self.limits}.",
            "",
            "## Assembly vs replay",
            "",
            "Times in ms. *assemble* = graph query + policy + serialisation (the timings "
            "`assemble_context` returns); *e2e* adds persisting the assembly record. *replay* = load the "
            "whole lineage transcript with every tool call and raw payload, build the legacy replay, count "
            "its tokens.",
            "",
            "| artifacts | branches | participants | lineage depth | setup s | assemble p50 | assemble p99 "
            "| graph p50 | policy p50 | serialise p50 | e2e p50 | e2e p99 | replay p50 (load/build/count) "
            "| assembled tok | replay tok |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|",
        ]
        for r in sorted(self.results, key=lambda r: (r.config.branches, r.config.participants, r.config.size)):
            a, rp = r.assembly, r.replay
            lines.append(
                f"| {r.config.size:,} | {r.config.branches} | {r.config.participants} | {r.lineage_depth} "
                f"| {r.load_seconds:.1f} | {a['assemble_ms']['p50']:.1f} | {a['assemble_ms']['p99']:.1f} "
                f"| {a['graph_query_ms']['p50']:.1f} | {a['policy_ms']['p50']:.1f} | {a['serialise_ms']['p50']:.1f} "
                f"| {a['end_to_end_ms']['p50']:.1f} | {a['end_to_end_ms']['p99']:.1f} "
                f"| {rp['total_ms']['p50']:,.0f} ({rp['load_ms']['p50']:,.0f}/{rp['build_ms']['p50']:,.0f}/"
                f"{rp['count_ms']['p50']:,.0f}; n={rp['total_ms']['n']}) "
                f"| {r.assembled_tokens:,} | {r.replay_tokens:,} |"
            )
        factors = self.growth_factors()
        if factors:
            lines += ["", "## Growth factor of p50, 1k → 100k artifacts", "",
                      "| branches | participants | assemble | e2e | replay |", "|---:|---:|---:|---:|---:|"]
            lines += [f"| {f['branches']} | {f['participants']} | x{f['assemble_p50_factor']} "
                      f"| x{f['end_to_end_p50_factor']} | x{f['replay_p50_factor']} |" for f in factors]
        explained = [r for r in self.results if r.explain]
        if explained:
            lines += ["", "## EXPLAIN (ANALYZE, BUFFERS) of the candidate queries", ""]
            for r in explained:
                lines += [f"### {r.config.size:,} artifacts, {r.config.branches} branch(es), "
                          f"{r.config.participants} participants", "",
                          "| query | verdict | index nodes | seq-scanned tables | exec ms | buffers hit/read |",
                          "|---|---|---:|---|---:|---|"]
                for q in r.explain:
                    indexes = sorted({s.split(" using ")[1].split(" on ")[0] for s in q.index_scans})
                    lines.append(f"| {q.label} | {q.verdict} | {len(q.index_scans)} ({', '.join(indexes)}) "
                                 f"| {', '.join(q.seq_scans) or '-'} | {q.execution_ms:.2f} "
                                 f"| {q.shared_hit}/{q.shared_read} |")
                lines.append("")
        return "\n".join(lines) + "\n"

    def write_plots(self, directory: Path) -> list[Path]:
        """PNG plots (p50/p99 vs size; stacked split at each size), if matplotlib is installed."""
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            return []
        directory.mkdir(parents=True, exist_ok=True)
        data = self.plot_data()
        paths = []
        fig, ax = plt.subplots(figsize=(8, 5))
        for s in data["series"]:
            ax.plot(s["size"], s["assemble_p50_ms"], marker="o", label=f"assemble p50, {s['label']}")
            ax.plot(s["size"], s["assemble_p99_ms"], linestyle=":", marker=".", label=f"assemble p99, {s['label']}")
            ax.plot(s["size"], s["replay_p50_ms"], linestyle="--", marker="x", label=f"replay p50, {s['label']}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(data["x"])
        ax.set_ylabel(data["y"])
        ax.legend(fontsize=6)
        path = directory / "growth-latency.png"
        fig.savefig(path, dpi=120, bbox_inches="tight")
        plt.close(fig)
        paths.append(path)
        fig, axes = plt.subplots(1, len(data["series"]), figsize=(4 * len(data["series"]), 4), squeeze=False)
        for ax, s in zip(axes[0], data["series"], strict=True):
            bottom = [0.0] * len(s["size"])
            labels = [f"{n:,}" for n in s["size"]]
            for key, values in s["split_p50_ms"].items():
                ax.bar(labels, values, bottom=bottom, label=key)
                bottom = [b + v for b, v in zip(bottom, values, strict=True)]
            ax.set_title(s["label"], fontsize=8)
            ax.set_ylabel("p50 ms")
        axes[0][0].legend(fontsize=7)
        path = directory / "growth-split.png"
        fig.savefig(path, dpi=120, bbox_inches="tight")
        plt.close(fig)
        paths.append(path)
        return paths


async def _measure(
    deps: GraphDeps,
    config: GrowthConfig,
    cache: _ResultCache,
    *,
    samples: int,
    warmup: int,
    replay_samples: int,
    replay_budget_s: float,
    explain: bool,
    cleanup: bool,
    seed: int,
) -> ConfigResult:
    loaded = await load_history(deps, config, cache, seed=seed)
    try:
        boundary = GenerationBoundary(
            account_id=loaded.account_id, conversation_id=loaded.conversation_id,
            branch_id=loaded.active_branch_id, participant_id=loaded.participant_id,
            runtime_kind=RuntimeKind.CHAT, provider_route="local", now=loaded.now,
        )
        timings: dict[str, list[float]] = {k: [] for k in
                                           ("assemble_ms", "graph_query_ms", "policy_ms", "serialise_ms",
                                            "end_to_end_ms")}
        last = None
        for n in range(warmup + samples):
            start = time.perf_counter()
            last = await assemble_context(deps, boundary)
            e2e = (time.perf_counter() - start) * 1000
            if n < warmup:
                continue
            t = last.timings
            timings["graph_query_ms"].append(t.graph_query_ms)
            timings["policy_ms"].append(t.policy_ms)
            timings["serialise_ms"].append(t.serialise_ms)
            timings["assemble_ms"].append(t.graph_query_ms + t.policy_ms + t.serialise_ms)
            timings["end_to_end_ms"].append(e2e)
        assert last is not None
        c = last.candidates
        candidates = {"messages": len(c.messages), "tool_calls": len(c.tool_calls), "artifacts": len(c.artifacts),
                      "tool_memories": len(c.tool_memories), "user_memories": len(c.user_memories),
                      "skill_states": len(c.skill_states), "checkpoints": len(c.checkpoints)}
        replays: list[dict[str, float]] = []
        spent = 0.0
        while len(replays) < max(1, replay_samples) and (not replays or spent < replay_budget_s):
            one = await replay_transcript(deps, loaded)
            replays.append(one)
            spent += one["total_ms"] / 1000
        explained = await explain_candidate_queries(deps, loaded) if explain else []
        return ConfigResult(
            config=config,
            counts=loaded.counts,
            lineage_depth=loaded.lineage_depth,
            lineage_artifacts=loaded.lineage_artifacts,
            payload_bytes=loaded.payload_bytes,
            load_seconds=round(loaded.load_seconds, 2),
            assembly={k: _stats(v) for k, v in timings.items()},
            candidates=candidates,
            assembled_tokens=last.result.record.assembled_tokens,
            legacy_tokens_recorded=last.result.record.legacy_tokens,
            replay={k: _stats([r[k] for r in replays]) for k in ("total_ms", "load_ms", "build_ms", "count_ms")},
            replay_tokens=int(replays[0]["tokens"]),
            replay_messages=int(replays[0]["messages"]),
            explain=explained,
        )
    finally:
        if cleanup:
            await delete_history(deps, loaded.account_id)


@asynccontextmanager
async def _deps_for(settings: Settings | None, deps: GraphDeps | None) -> Iterator[GraphDeps]:  # type: ignore[misc]
    if deps is not None:
        yield deps
        return
    from dossier.runtime import open_graph

    async with open_graph(settings or Settings()) as opened:
        yield opened


async def run_growth(
    settings: Settings | None = None,
    sizes: Sequence[int] = DEFAULT_SIZES,
    branches: Sequence[int] = DEFAULT_BRANCHES,
    participants: Sequence[int] = DEFAULT_PARTICIPANTS,
    samples: int = 30,
    *,
    deps: GraphDeps | None = None,
    warmup: int = 2,
    replay_samples: int = 3,
    replay_budget_s: float = 20.0,
    explain_at: Sequence[int] | None = None,
    cleanup: bool = True,
    seed: int = 7,
    progress: Callable[[str], None] | None = None,
) -> GrowthReport:
    """Measure assembly and replay for every (size, branches, participants) configuration.

    Args:
        settings: where Postgres and S3 are (embedded by default); ignored when ``deps`` is given.
        sizes: tool artifacts per conversation.
        branches: branch counts (a chain; the last branch is the active one).
        participants: participant counts (one user, the rest assistants).
        samples: timed assemblies per configuration.
        deps: use these dependencies instead of opening the graph from ``settings``.
        warmup: untimed assemblies first.
        replay_samples: replays per configuration (at least one; more only within ``replay_budget_s``).
        replay_budget_s: stop sampling replay once this much time was spent on it.
        explain_at: sizes whose candidate queries are EXPLAINed; the largest size when ``None``.
        cleanup: delete each configuration's account afterwards.
        seed: makes the synthetic history deterministic.
        progress: called with a line per finished configuration.

    Returns:
        The report.
    """
    sizes, branches, participants = tuple(sizes), tuple(branches), tuple(participants)
    explain_sizes = set(explain_at if explain_at is not None else (max(sizes),))
    started = datetime.now(UTC)
    wall = time.perf_counter()
    results = []
    async with _deps_for(settings, deps) as graph:
        cache = _ResultCache(graph.counter, seed)
        cache.ensure(max(sizes))
        for size in sizes:
            for b in branches:
                for p in participants:
                    config = GrowthConfig(size=size, branches=b, participants=p)
                    result = await _measure(graph, config, cache, samples=samples, warmup=warmup,
                                            replay_samples=replay_samples, replay_budget_s=replay_budget_s,
                                            explain=size in explain_sizes, cleanup=cleanup, seed=seed)
                    results.append(result)
                    if progress is not None:
                        a = result.assembly
                        progress(f"{config}: setup {result.load_seconds:.1f}s, assemble p50 "
                                 f"{a['assemble_ms']['p50']:.1f} ms p99 {a['assemble_ms']['p99']:.1f} ms, "
                                 f"replay p50 {result.replay['total_ms']['p50']:.0f} ms")
        limits = asdict(graph.limits)
    notes = [
        "Setup used a bulk loader (COPY through SQLAlchemy's asyncpg connection; realistic rows, every "
        "constraint and the live path's seq order respected; ANALYZE after loading). Assembly itself goes "
        "through the normal code path: activities.context.assemble_context (load_candidates, select_context, "
        "render_context, save_context_assembly).",
        "One conversation per configuration, each in a fresh account. Branches form a chain; branch b forks "
        "from b-1 at 85% of b-1's own turns (the rest is a sibling tail off the active lineage). The measured "
        "call is a chat turn of the first assistant on the last branch, route 'local', no evidence requests.",
        "Payloads are 0.5-4 KB JSON / text / markdown (orders, CI logs, calendar, files; ~2.4% failed calls "
        "with tracebacks), stored inline; memories derived by policy.derive.derive_memory; same-subject "
        "results supersede earlier ones as activities.memory does.",
        "p99 is nearest-rank: with 30 samples it is the slowest sample.",
    ]
    return GrowthReport(
        results=results, sizes=sizes, branches=branches, participants=participants, samples=samples,
        started_at=started.isoformat(timespec="seconds"), run_seconds=time.perf_counter() - wall,
        precompute_seconds=cache.build_seconds, limits=limits, notes=notes,
    )


async def run_quick(deps: GraphDeps | None = None, settings: Settings | None = None) -> GrowthReport:
    """The quick mode the tests run: sizes (20, 60), small branch and participant counts, 3 samples."""
    return await run_growth(settings, QUICK_SIZES, QUICK_BRANCHES, QUICK_PARTICIPANTS, samples=3, deps=deps,
                            warmup=1, replay_samples=1)


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m harness.bench.growth``: run, print Markdown, write JSON/Markdown/PNG to ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sizes", type=lambda s: tuple(int(x) for x in s.split(",")), default=DEFAULT_SIZES)
    parser.add_argument("--branches", type=lambda s: tuple(int(x) for x in s.split(",")), default=DEFAULT_BRANCHES)
    parser.add_argument("--participants", type=lambda s: tuple(int(x) for x in s.split(",")),
                        default=DEFAULT_PARTICIPANTS)
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--out", type=Path, default=Path("bench-results"))
    args = parser.parse_args(argv)

    def progress(line: str) -> None:
        print(line, flush=True)

    if args.quick:
        report = asyncio.run(run_growth(None, QUICK_SIZES, QUICK_BRANCHES, QUICK_PARTICIPANTS, samples=3,
                                        warmup=1, replay_samples=1, progress=progress))
    else:
        report = asyncio.run(run_growth(None, args.sizes, args.branches, args.participants, args.samples,
                                        progress=progress))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "growth.md").write_text(report.to_markdown())
    (args.out / "growth.json").write_text(report.to_json())
    report.write_plots(args.out)
    print(report.to_markdown())


if __name__ == "__main__":
    main()


__all__ = [
    "ConfigResult",
    "ExplainedQuery",
    "GrowthConfig",
    "GrowthReport",
    "LoadedHistory",
    "delete_history",
    "explain_candidate_queries",
    "load_history",
    "replay_transcript",
    "run_growth",
    "run_quick",
]
