"""Real tool-using trajectories: full replay vs. peers vs. Dossier, tokens and carried references.

Each trajectory (``../shared/data/traces/README.md`` format) is imported
into the runtime graph incrementally through the live code path (model run,
assistant message with its tool calls, ``begin_tool_call``,
``ingest_tool_result``); at each model call *k*
Dossier's context is assembled with :func:`activities.context.assemble_context`
*before* call *k* is written, and every peer strategy gets the transcript
strictly before call *k*. Measures are in :mod:`harness.bench.traces_measure`,
aggregation and output in :mod:`harness.bench.traces_report`.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from activities.ingest import ToolOutcome, begin_tool_call, ingest_tool_result, memory_id_for
from activities.context import assemble_context, read_planned_payloads
from activities.deps import GraphDeps
from activities.tokens import token_encoder
from harness.bench.machine import repo_relative
from harness.bench.billing import PRICE_MODELS, Encode, Prompt, bill_sequence, message_blocks, transcript_breakpoints
from harness.bench.peers import DEFAULT_BUDGET, peer_strategies
from harness.bench.strategy import CallInput, FullReplay, count_tokens, message_text
from harness.bench.traces_measure import TraceCall, to_openai, trace_calls
from harness.bench.traces_report import CallRow, RefOutcome, TracesReport, epoch_class
from dossier.runtime import open_graph
from dossier.settings import Settings
from policy.assembler import render_context, select_context
from policy.compact import compact_text, parse_compact, to_json
from policy.payloads import parse_structured
from policy.enums import MessageRole, PrivacyClass, RuntimeKind, ToolCallStatus
from policy.policy import ContextPolicy
from policy.records import EpochRecord, GenerationBoundary, PreviousAssembly, ToolCallRequest
from policy.tools import wire_name
from policy.validate import provider_problems
from policy.tokens import MESSAGE_OVERHEAD_TOKENS
from store import conversations, messages as message_store
from store.writes import NewMessage, NewToolCall

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TRACES = Path(
    os.environ.get("DOSSIER_TRACES") or REPO_ROOT.parent / "shared/data/traces/traces.jsonl"
).absolute()
"""``$DOSSIER_TRACES``, else ``../shared/data/traces/traces.jsonl`` next to the repository."""
DEFAULT_CODING_TRACES = Path(
    os.environ.get("DOSSIER_CODING_TRACES") or REPO_ROOT.parent / "shared/data/traces-coding/traces.jsonl"
).absolute()
"""``$DOSSIER_CODING_TRACES``, else ``../shared/data/traces-coding/traces.jsonl``: real coding-agent runs
(mini-swe-agent on SWE-bench Verified), the second named source of ``make bench``."""
PROVIDER_ROUTE = "openai"
"""The participant's provider, hence the policy route (the agents were OpenAI-style models)."""
START = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
MESSAGE_SECONDS = 5
"""The benchmark's clock where a trajectory carries no timestamps (none of the shared ones do: the coding
source's were dropped): a message every 5 seconds, so every call falls within every provider's cache lifetime,
no strategy is billed a cold cache and Dossier never restarts an epoch for one. A trajectory whose every
message has a ``timestamp`` (ISO 8601, or seconds since the epoch) runs on its own clock instead."""


def trace_clock(trace: dict[str, Any]) -> list[datetime] | None:
    """Each message's ``timestamp`` as a time, when every message has one; else ``None``.

    Raises:
        ValueError: a timestamp that is neither ISO 8601 nor a number of seconds, or one earlier than the
            message before it.
    """
    stamps = [message.get("timestamp") for message in trace.get("messages", ())]
    if not stamps or any(stamp is None for stamp in stamps):
        return None
    times = []
    for index, stamp in enumerate(stamps):
        try:
            time = (datetime.fromtimestamp(stamp, UTC) if isinstance(stamp, (int, float)) and not isinstance(stamp, bool)
                    else datetime.fromisoformat(str(stamp)))
        except (ValueError, OverflowError, OSError) as e:
            raise ValueError(f"trajectory {trace.get('id', '')!r}: message {index}'s timestamp {stamp!r} is neither "
                             f"ISO 8601 nor seconds since the epoch") from e
        times.append(time if time.tzinfo is not None else time.replace(tzinfo=UTC))
    for index, (before, after) in enumerate(zip(times, times[1:]), start=1):
        if after < before:
            raise ValueError(f"trajectory {trace.get('id', '')!r}: message {index}'s timestamp is earlier than "
                             f"the one before it")
    return times


def load_traces(path: str | Path, limit: int | None = None) -> list[dict[str, Any]]:
    """Trajectories from a JSONL file (one object per line), the first ``limit`` of them."""
    out: list[dict[str, Any]] = []
    if limit is not None and limit <= 0:
        return out
    if not Path(path).is_file():
        raise FileNotFoundError(f"no trajectory file at {path}: pass --traces PATH or set DOSSIER_TRACES")
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                out.append(json.loads(line))
                if limit is not None and len(out) >= limit:
                    break
    return out


@dataclass
class _Import:
    """One trajectory being written into the graph, message by message."""

    deps: GraphDeps
    account_id: str
    trace: dict[str, Any]
    conversation_id: str = ""
    branch_id: str = ""
    participant_id: str = ""
    tool_rows: dict[str, str] = field(default_factory=dict)
    """Trace tool-call id -> recorded ToolCall row id."""
    artifacts: dict[str, str] = field(default_factory=dict)
    """Recorded ToolCall row id -> artifact id (τ-bench reuses a trace's tool-call ids across calls)."""
    user_messages: dict[int, str] = field(default_factory=dict)
    """Trace message index -> message id."""
    clock: list[datetime] | None = field(init=False, default=None)
    """The trajectory's own message times (:func:`trace_clock`), if it has them."""

    def __post_init__(self) -> None:
        self.clock = trace_clock(self.trace)

    def at(self, index: int) -> datetime:
        """Message ``index``'s time: the trajectory's own or the benchmark's clock (:data:`MESSAGE_SECONDS`)."""
        return self.clock[index] if self.clock is not None else START + timedelta(seconds=MESSAGE_SECONDS * index)

    async def open(self) -> None:
        meta = self.trace.get("meta") or {}
        first = self.trace["messages"][0] if self.trace["messages"] else {}
        system_prompt = first.get("content") or "" if first.get("role") == "system" else ""
        async with self.deps.sessions() as session, session.begin():
            conversation = await conversations.create_conversation(
                session, self.account_id, title=self.trace.get("id", "")
            )
            participant = await conversations.add_participant(
                session, self.account_id, conversation.id, name="agent", role="assistant",
                provider=PROVIDER_ROUTE, model=str(meta.get("agent_model") or "unknown"),
                system_prompt=system_prompt,
            )
        self.conversation_id, self.branch_id = conversation.id, conversation.root_branch_id
        self.participant_id = participant.id

    async def start_run(self) -> str:
        async with self.deps.sessions() as session, session.begin():
            run = await message_store.start_model_run(
                session, self.account_id, self.conversation_id, self.branch_id, self.participant_id,
                runtime_kind=RuntimeKind.CHAT, provider=PROVIDER_ROUTE,
            )
        return run.id

    def boundary(self, index: int, run_id: str | None = None) -> GenerationBoundary:
        return GenerationBoundary(
            account_id=self.account_id, conversation_id=self.conversation_id, branch_id=self.branch_id,
            participant_id=self.participant_id, runtime_kind=RuntimeKind.CHAT, provider_route=PROVIDER_ROUTE,
            now=self.at(index), model_run_id=run_id,
        )

    async def write(self, index: int, message: dict[str, Any], run_id: str | None) -> None:
        role = message["role"]
        if role == "system" and index == 0:
            return  # the participant's system prompt
        if role in ("user", "system"):
            async with self.deps.sessions() as session, session.begin():
                record = await message_store.append_message(
                    session, self.account_id, self.conversation_id, NewMessage(
                        branch_id=self.branch_id, role=MessageRole(role), content=message.get("content") or ""),
                )
            self.user_messages[index] = record.id
        elif role == "assistant":
            await self._assistant(index, message, run_id)
        elif role == "tool":
            await self._tool_result(index, message)

    async def _assistant(self, index: int, message: dict[str, Any], run_id: str | None) -> None:
        run_id = run_id or await self.start_run()
        # As the live path does: provider call ids are only unique per response, namespace them by run.
        calls = tuple(
            ToolCallRequest(call_id=f"{run_id}:{c['id']}", name=c["name"], arguments=dict(c.get("arguments") or {}))
            for c in message.get("tool_calls") or ()
        )
        async with self.deps.sessions() as session, session.begin():
            record = await message_store.append_message(
                session, self.account_id, self.conversation_id, NewMessage(
                    branch_id=self.branch_id, role=MessageRole.ASSISTANT, content=message.get("content") or "",
                    author_participant_id=self.participant_id, model_run_id=run_id, tool_calls=calls),
            )
        for source, call in zip(message.get("tool_calls") or (), calls, strict=True):
            recorded = await begin_tool_call(
                self.deps, self.account_id, self.conversation_id, NewToolCall(
                    branch_id=self.branch_id, participant_id=self.participant_id, call_id=call.call_id, name=call.name,
                    arguments=call.arguments, runtime_kind=RuntimeKind.CHAT, model_run_id=run_id, at=self.at(index),
                    privacy=PrivacyClass.USER),
            )
            self.tool_rows[source["id"]] = recorded.id
        async with self.deps.sessions() as session, session.begin():
            await message_store.finish_model_run(
                session, self.account_id, run_id, status="succeeded", message_id=record.id
            )

    async def _tool_result(self, index: int, message: dict[str, Any]) -> None:
        row = self.tool_rows.get(message.get("tool_call_id", ""))
        if row is None or row in self.artifacts:
            return  # a result without its call, or a second one for it (none in the shared split)
        outcome = ToolOutcome(status=ToolCallStatus.SUCCEEDED, result=(message.get("content") or "").encode(),
                              content_type="text/plain")
        ingested = await ingest_tool_result(self.deps, self.account_id, row, outcome, captured_at=self.at(index))
        self.artifacts[row] = ingested.artifact.id


async def _reassemble(deps: GraphDeps, boundary: GenerationBoundary, candidates, budget: int | None,
                      cache: dict[str, bytes], previous: PreviousAssembly | None, policy: ContextPolicy | None = None):
    """The same candidate snapshot under another budget or policy, in the variant's own epoch (not persisted).

    ``cache`` holds the raw bytes already read for this call, so the variants read each object once;
    ``previous`` is the variant's own previous call (each variant is a participant of its own).
    """
    bounded = boundary.model_copy(update={"token_budget": budget}) if budget is not None else boundary
    selection = select_context(policy or deps.policy, bounded, candidates, deps.counter, previous)
    raw, unavailable = await read_planned_payloads(deps, boundary.account_id, selection, cache)
    return render_context(selection, raw, deps.counter, unavailable, deps.rendered)


def provider_invalid(messages: Sequence[dict[str, Any]]) -> list[str]:
    """Why OpenAI's or Anthropic's API would refuse ``messages`` (empty: both accept them).

    Tool names are checked as a client sends them (dots encoded, :func:`policy.tools.wire_name`):
    WorkBench's dotted names are the data's, not a strategy's, choice.
    """
    sendable = []
    for message in messages:
        calls = message.get("tool_calls")
        if calls:
            message = {**message, "tool_calls": [
                {**call, "function": {**call["function"], "name": wire_name(call["function"]["name"])}}
                if "function" in call else {**call, "name": wire_name(call.get("name", ""))} for call in calls]}
        sendable.append(message)
    return provider_problems(sendable)


def compact_figures(traces: Sequence[dict[str, Any]], counter) -> dict[str, dict[str, Any]]:
    """Per source: tool results, how many ``policy.compact`` writes compactly, whether every one reads back
    exactly (``parse_compact``), and the tokens sent (compact where it applies) against the raw results'."""
    out: dict[str, dict[str, Any]] = {}
    for trace in traces:
        figures = out.setdefault(trace.get("source", ""), {"results": 0, "compacted": 0, "round_trip_exact": 0,
                                                             "raw_tokens": 0, "sent_tokens": 0})
        for message in trace["messages"]:
            if message.get("role") != "tool":
                continue
            raw = message.get("content") or ""
            text = compact_text(raw)
            figures["results"] += 1
            figures["raw_tokens"] += counter(raw)
            figures["sent_tokens"] += counter(text if text is not None else raw)
            if text is not None:
                figures["compacted"] += 1
                data, _ = parse_structured(raw, exact_numbers=True)
                figures["round_trip_exact"] += to_json(parse_compact(text)) == to_json(data)
    for figures in out.values():
        figures["sent_over_raw_tokens"] = round(figures["sent_tokens"] / figures["raw_tokens"], 4) \
            if figures["raw_tokens"] else None
    return out


NO_EPOCHS = "dossier-no-epochs"
"""The ablation: Dossier's policy with every call starting a new epoch (assembled afresh, as before epochs)."""
WIDE_BUDGET = 32_768
WIDE = "dossier@32k"
"""Dossier's policy at a 32,768-token budget: what a model with a large window gets by default
(activities/providers/windows.py) next to the policy's 8,192."""


def _dossier_reason(result, importer: _Import, trace: dict[str, Any], ref) -> str:
    """Why Dossier's context lost ``ref``: the PolicyDecision about the record that held it."""
    subjects: list[str] = []
    if ref.kind == "tool":
        for trace_call_id in reversed(ref.source_tool_call_ids):
            row = importer.tool_rows.get(trace_call_id, "")
            artifact_id = importer.artifacts.get(row)
            if artifact_id:
                subjects += [memory_id_for(artifact_id), artifact_id, row]
    else:
        for index, message in reversed(list(enumerate(trace["messages"]))):
            if index in importer.user_messages and ref.value in (message.get("content") or ""):
                subjects.append(importer.user_messages[index])
    for subject in filter(None, subjects):
        for decision in result.decisions:
            if decision.subject_ref.endswith(subject):
                if decision.omission is not None:
                    return f"{decision.kind}: {decision.omission.value} ({decision.reason})"
                return f"{decision.subject_ref.split(':', 1)[0]} {decision.outcome.value}, value not in its text"
    return "not in context"


def _peer_reason(context: Sequence[dict[str, Any]], ref, trace_messages: Sequence[dict[str, Any]]) -> str:
    if ref.kind == "user":
        return "user message dropped" if not any(m.get("role") == "user" and ref.value in (m.get("content") or "")
                                                for m in context) else "not in context"
    present = {m.get("tool_call_id"): m for m in context if m.get("role") == "tool"}
    ids = [i for i in ref.source_tool_call_ids if i]
    if ids and all(i not in present for i in ids):
        return "tool result message dropped"
    if ids:
        return "tool result cleared/trimmed"
    return "not in context"


def _outcomes(text: str, call: TraceCall, reason) -> list[RefOutcome]:
    out = []
    for ref in call.refs:
        kept = ref.value in text
        out.append(RefOutcome(ref.value, ref.kind, ref.strict, kept, None if kept else reason(ref)))
    return out


Observe = Callable[[str, list[dict[str, Any]]], None]
"""Called with (strategy name, the messages it sends) for each request, in the order they are accounted."""


async def run_trace(deps: GraphDeps, account_id: str, trace: dict[str, Any], peers: list[Any],
                    encode: Encode | None = None, observe: Observe | None = None) -> list[CallRow]:
    """Import one trajectory incrementally and measure every model call.

    With ``encode`` (text -> token ids), each strategy's sequence of prompts is
    also billed under every price model (:mod:`harness.bench.billing`). ``observe``
    sees the exact messages every strategy sends, so a check against a real server
    (:mod:`harness.bench.cache_check`) sends what the benchmark accounts, not a copy of it.
    """
    counter = deps.counter
    prompts: dict[str, list[Prompt]] = defaultdict(list)

    def sent(name: str, messages: list[dict[str, Any]], at: datetime, epoch: EpochRecord | None = None) -> list[str]:
        """Bill ``messages`` as ``name``'s next request, sent at ``at`` (Dossier's with its epoch's breakpoints
        and cache tier); returns why a provider would refuse it."""
        if observe is not None:
            observe(name, messages)
        if encode is not None:
            prompts[name].append(Prompt(
                message_blocks(messages, encode),
                epoch.cache_breakpoints if epoch is not None else transcript_breakpoints(messages),
                at=(at - START).total_seconds(), long_tier=epoch is not None and epoch.cache_ttl_seconds is not None))
        return provider_invalid(messages)

    importer = _Import(deps, account_id, trace)
    await importer.open()
    trace_messages = trace["messages"]
    openai = to_openai(trace_messages)
    system_tokens = (MESSAGE_OVERHEAD_TOKENS + counter(openai[0]["content"] or "")
                     if openai and openai[0]["role"] == "system" else 0)
    calls = {c.message_index: c for c in trace_calls(trace_messages)}
    full = FullReplay()
    rows: list[CallRow] = []
    previous: dict[str, PreviousAssembly | None] = defaultdict(lambda: None)
    """Each Dossier variant's previous call: its epoch."""
    no_epochs = deps.policy.model_copy(update={"epochs": False})
    for index, message in enumerate(trace_messages):
        run_id = None
        call = calls.get(index)
        if call is not None:
            run_id = await importer.start_run()
            before = CallInput(messages=openai[:index], token_budget=DEFAULT_BUDGET)
            row = CallRow(trajectory=trace.get("id", ""), source=trace.get("source", ""), call=call.index,
                          calls_in_trajectory=len(calls))
            full_messages = full.context(before)
            when = importer.at(index)
            invalid = sent(full.name, full_messages, when)
            row.add(full.name, count_tokens(full_messages, counter), system_tokens,
                    _outcomes("\n".join(map(message_text, full_messages)), call, lambda r: "not in transcript"),
                    invalid)
            peer_tokens: dict[str, int] = {}
            for peer in peers:
                context = peer.context(before)
                invalid = sent(peer.name, context, when)
                tokens = count_tokens(context, counter)
                peer_tokens[peer.name] = tokens
                row.add(peer.name, tokens, system_tokens,
                        _outcomes("\n".join(map(message_text, context)), call,
                                  lambda r, c=context: _peer_reason(c, r, trace_messages)), invalid)
            # Dossier: assemble from the graph as it stands before call k is written.
            boundary = importer.boundary(index, run_id)
            assembled = await assemble_context(deps, boundary)
            row.assembly_id = assembled.assembly_id
            variants = [("dossier", assembled.result)]
            payloads: dict[str, bytes] = {}
            variants.append((NO_EPOCHS, await _reassemble(deps, boundary, assembled.candidates, None, payloads,
                                                          previous[NO_EPOCHS], no_epochs)))
            variants.append((WIDE, await _reassemble(deps, boundary, assembled.candidates, WIDE_BUDGET, payloads,
                                                     previous[WIDE])))
            for name, budget in peer_tokens.items():
                variants.append((f"dossier@{name}", await _reassemble(
                    deps, boundary, assembled.candidates, budget, payloads, previous[f"dossier@{name}"])))
            for name, result in variants:
                previous[name] = PreviousAssembly.of(result.record, boundary)
                context = result.to_openai()
                epoch = result.record.epoch
                invalid = sent(name, context, when, epoch)
                row.add(name, count_tokens(context, counter), system_tokens,
                        _outcomes("\n".join(map(message_text, context)), call,
                                  lambda r, res=result: _dossier_reason(res, importer, trace, r)), invalid)
                if epoch is not None:
                    row.strategies[name].epoch = epoch_class(epoch.started, epoch.reason)
            rows.append(row)
        await importer.write(index, message, run_id)
    for name, sequence in prompts.items():
        for model in PRICE_MODELS.values():
            for row, bill in zip(rows, bill_sequence(sequence, model), strict=True):
                row.strategies[name].bills[model.name] = bill
    return rows


async def run_traces_with(
    deps: GraphDeps, path: str | Path, limit: int | None = None, concurrency: int = 4,
    encode: Encode | None = None,
) -> TracesReport:
    """Run the benchmark on existing graph dependencies (one fresh account per run).

    ``encode`` (text -> token ids) turns on billing; :func:`run_traces` passes the
    configured tiktoken encoding.
    """
    traces = load_traces(path, limit)
    # The same texts are counted again and again (every strategy, every later call): memoise
    # the injected counter. Counts are unchanged; tiktoken was most of the run's CPU time.
    deps = replace(deps, counter=lru_cache(maxsize=262_144)(deps.counter))
    peers_by_worker = [peer_strategies(deps.counter) for _ in range(concurrency)]
    async with deps.sessions() as session, session.begin():
        account_id = await conversations.create_account(session, name=f"bench traces {Path(path).name}")
    started = time.perf_counter()
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(len(traces)):
        queue.put_nowait(i)
    results: list[list[CallRow]] = [[] for _ in traces]

    async def worker(peers: list[Any]) -> None:
        while not queue.empty():
            i = queue.get_nowait()
            results[i] = await run_trace(deps, account_id, traces[i], peers, encode)

    await asyncio.gather(*(worker(peers) for peers in peers_by_worker))
    elapsed = time.perf_counter() - started
    peers = peers_by_worker[0]
    parameters: dict[str, Any] = {"full_replay": {"messages": "every earlier message, tool results verbatim"}}
    if encode is not None:
        parameters["price_models"] = {name: model.parameters() for name, model in PRICE_MODELS.items()}
    parameters.update({p.name: p.parameters for p in peers})
    parameters["langchain_trim"]["orphan_tool_messages_dropped"] = sum(
        getattr(p[0], "orphans_dropped", 0) for p in peers_by_worker)
    parameters["dossier"] = {"policy": deps.policy.version, "token_budget": deps.policy.default_token_budget,
                             "provider_route": PROVIDER_ROUTE,
                             "tool_specs": "ToolCatalog default for every tool (none declared), privacy declared user",
                             "compact_results": compact_figures(traces, deps.counter)}
    parameters[WIDE] = {"policy": deps.policy.version, "token_budget": WIDE_BUDGET,
                        "assembly": "select_context + render_context on the default assembly's candidate snapshot "
                                    "(not persisted), in its own epoch"}
    parameters[NO_EPOCHS] = {"policy": f"{deps.policy.version} with epochs=false",
                             "assembly": "every call starts a new epoch: assembled afresh from the graph"}
    for p in peers:
        parameters[f"dossier@{p.name}"] = {
            "policy": deps.policy.version, "token_budget": f"{p.name}'s prompt tokens at the same call",
            "assembly": "select_context + render_context on the default assembly's candidate snapshot (not persisted)"}
    return TracesReport(rows=[row for rows in results for row in rows], parameters=parameters,
                        trajectories=len(traces), seconds=elapsed, path=repo_relative(path), account_id=account_id)


async def run_traces(settings: Settings, path: str | Path = DEFAULT_TRACES, limit: int | None = None,
                     concurrency: int = 4) -> TracesReport:
    """Open the configured (or embedded) graph and run the traces benchmark on ``path``.

    Args:
        settings: the configuration; embedded Postgres and S3 are started when no URL is set.
        path: a JSONL file in the traces README's format.
        limit: only the first ``limit`` trajectories.
        concurrency: trajectories imported at once (each in its own conversation).

    Returns:
        The report: per-call rows, ``to_json()`` and ``to_markdown()``.
    """
    async with open_graph(settings) as deps:
        return await run_traces_with(deps, path, limit, concurrency,
                                     encode=token_encoder(settings.tiktoken_encoding))


__all__ = ["DEFAULT_TRACES", "load_traces", "run_trace", "run_traces", "run_traces_with"]
