"""The orchestration benchmark's runs: one agent turn through Temporal or in-process, throughput, history growth."""

from __future__ import annotations

import asyncio
import json
import math
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from temporalio.client import Client
from temporalio.testing import ActivityEnvironment

from activities.deps import GraphDeps
from activities.tokens import token_encoder
from activities.tools.registry import ToolRegistry, wire_name
from activities.turns import TurnActivities, message_id_for
from contracts import (
    AssembleInput,
    CallModelInput,
    ModelRunInput,
    Scope,
    ToolCallInput,
    TurnInput,
    TurnResult,
    WorkflowName,
)
from dossier.runtime import SAMPLE_WORKSPACE
from policy.enums import MessageRole, RuntimeKind
from store import conversations, messages
from store import tools as tool_store
from store.assemblies import get_context_assembly
from store.payloads import read_artifact_payload
from store.writes import NewMessage

from harness.bench.billing import Encode, Prompt, billed_ratios, message_blocks, transcript_breakpoints
from harness.bench.orchestration_agent import MODEL, bench_providers, user_prompt
from harness.bench.orchestration_history import Transcript, history_size, json_bytes, message_bytes
from harness.bench.orchestration_report import HistoryPoint, ThroughputRow, TurnSample, size_text
from harness.bench.orchestration_timing import CURRENT_TIMING, Recorder, TurnTiming

Progress = Callable[[str], None]


def _percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of already sorted values (``q`` in 0..1)."""
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, max(0, math.ceil(q * len(sorted_values)) - 1))
    return sorted_values[index]



@dataclass
class Bench:
    """One benchmark session: a worker's client and dependencies, one account, and the turns run on them."""

    client: Client
    deps: GraphDeps
    """Instrumented dependencies (the worker's, with the tool catalog)."""
    tools: ToolRegistry
    task_queue: str
    recorder: Recorder
    account_id: str
    progress: Progress
    activities: TurnActivities = field(init=False)

    def __post_init__(self) -> None:
        self.activities = TurnActivities(deps=self.deps, tools=self.tools, workspace=SAMPLE_WORKSPACE,
                                         providers=bench_providers)

    # ------------------------------------------------------------------ graph setup

    async def new_conversation(self, title: str) -> tuple[Scope, str]:
        async with self.deps.sessions() as session, session.begin():
            conversation = await conversations.create_conversation(session, self.account_id, title=title)
            participant = await conversations.add_participant(
                session, self.account_id, conversation.id, name="Bench", provider="scripted", model=MODEL,
                system_prompt="You are Bench. Fetch the blobs you are asked for; cite result ids.",
            )
        scope = Scope(account_id=self.account_id, conversation_id=conversation.id,
                      branch_id=conversation.root_branch_id)
        return scope, participant.id

    async def say(self, scope: Scope, text: str) -> None:
        async with self.deps.sessions() as session, session.begin():
            await messages.append_message(session, self.account_id, scope.conversation_id, NewMessage(
                branch_id=scope.branch_id, role=MessageRole.USER, content=text))

    # ------------------------------------------------------------------ one turn, two ways

    async def temporal_turn(self, scope: Scope, participant_id: str) -> tuple[TurnResult, str, float]:
        workflow_id = f"bench-orch-{uuid.uuid4().hex[:12]}"
        start = time.perf_counter()
        result = await self.client.execute_workflow(
            WorkflowName.AGENT_TURN, TurnInput(scope=scope, participant_id=participant_id), id=workflow_id,
            task_queue=self.task_queue, result_type=TurnResult)
        return result, workflow_id, (time.perf_counter() - start) * 1000

    async def in_process_turn(self, scope: Scope, participant_id: str) -> tuple[TurnResult, str, float]:
        """The workflow's loop, calling the same activity methods directly (no Temporal)."""
        key = f"bench-inproc-{uuid.uuid4().hex[:12]}"
        timing = self.recorder.timing(key)
        environment = ActivityEnvironment()
        environment.info = replace(environment.info, workflow_id=key, workflow_run_id=key)
        acts = self.activities

        async def step(name: str, fn: Callable[[Any], Awaitable[Any]], argument: Any) -> Any:
            token = CURRENT_TIMING.set(timing)
            began = time.perf_counter()
            try:
                return await environment.run(fn, argument)
            finally:
                timing.add_activity(name, (time.perf_counter() - began) * 1000)
                CURRENT_TIMING.reset(token)

        start = time.perf_counter()
        runs: list[str] = []
        tool_call_ids: list[str] = []
        result: TurnResult | None = None
        for _ in range(TurnInput.model_fields["max_rounds"].default):
            run_id = str(uuid.uuid4())
            runs.append(run_id)
            await step("start_model_run", acts.start_model_run, ModelRunInput(
                scope=scope, participant_id=participant_id, model_run_id=run_id, runtime_kind=RuntimeKind.CHAT))
            assembly = await step("assemble_context", acts.assemble_context, AssembleInput(
                scope=scope, participant_id=participant_id, model_run_id=run_id, assembly_id=str(uuid.uuid4()),
                runtime_kind=RuntimeKind.CHAT, now=datetime.now(UTC)))
            model_step = await step("call_model", acts.call_model, CallModelInput(
                scope=scope, participant_id=participant_id, model_run_id=run_id,
                assembly_id=assembly.assembly_id, runtime_kind=RuntimeKind.CHAT))
            if model_step.answered:
                result = TurnResult(status="answered", message_id=model_step.message_id, model_run_ids=tuple(runs),
                                    tool_call_ids=tuple(tool_call_ids), participant_id=participant_id)
                break
            for plan in model_step.tools:
                tool_call_ids.append(plan.tool_call_id)
                ref = ToolCallInput(account_id=scope.account_id, tool_call_id=plan.tool_call_id)
                try:
                    await step("execute_tool", acts.execute_tool, ref)
                except Exception:
                    await step("finalize_tool_failure", acts.finalize_tool_failure, ref)
        if result is None:
            result = TurnResult(status="max_rounds", model_run_ids=tuple(runs), tool_call_ids=tuple(tool_call_ids),
                                participant_id=participant_id)
        return result, key, (time.perf_counter() - start) * 1000

    async def assembly_ms(self, model_run_ids: Sequence[str]) -> tuple[float, float, int, int]:
        """(policy + render ms, graph-query ms, legacy tokens, assembled tokens) of the runs' assemblies."""
        compute = graph = 0.0
        legacy = assembled = 0
        async with self.deps.sessions() as session:
            for run_id in model_run_ids:
                run = await messages.get_model_run(session, self.account_id, run_id)
                if not run.context_assembly_id:
                    continue
                stored = await get_context_assembly(session, self.account_id, run.context_assembly_id)
                compute += stored.timings.policy_ms + stored.timings.serialise_ms
                graph += stored.timings.graph_query_ms
                legacy, assembled = stored.record.legacy_tokens, stored.record.assembled_tokens
        return compute, graph, legacy, assembled

    async def sample(self, mode: str, concurrency: int, result: TurnResult, key: str, total_ms: float) -> TurnSample:
        timing = self.recorder.by_key.pop(key, TurnTiming())
        compute, graph, _, _ = await self.assembly_ms(result.model_run_ids)
        activities_ms = timing.activities_total_ms
        return TurnSample(
            mode=mode, concurrency=concurrency, total_ms=round(total_ms, 3), activities_ms=round(activities_ms, 3),
            temporal_ms=round(max(total_ms - activities_ms, 0.0), 3), postgres_ms=round(timing.postgres_ms, 3),
            s3_ms=round(timing.s3_ms, 3), assembly_ms=round(compute, 3), assembly_graph_ms=round(graph, 3),
            other_ms=round(max(activities_ms - timing.postgres_ms - timing.s3_ms - compute, 0.0), 3),
            activity_count=timing.activity_count, postgres_statements=timing.postgres_statements,
            s3_calls=timing.s3_calls, model_calls=len(result.model_run_ids), tool_calls=len(result.tool_call_ids),
            status=result.status, activity_ms={k: round(v, 3) for k, v in timing.activity_ms.items()},
        )

    # ------------------------------------------------------------------ (a) throughput

    async def throughput(self, mode: str, concurrency: int, turns: int, kb: int,
                         warmup: int) -> tuple[ThroughputRow, list[TurnSample]]:
        runner = self.temporal_turn if mode == "temporal" else self.in_process_turn
        prepared = []
        for index in range(warmup + turns):
            scope, participant = await self.new_conversation(f"bench {mode} c{concurrency} #{index}")
            await self.say(scope, user_prompt(index + 1, kb))
            prepared.append((scope, participant))
        for scope, participant in prepared[:warmup]:
            result, key, _ = await runner(scope, participant)
            self.recorder.by_key.pop(key, None)
        gate = asyncio.Semaphore(concurrency)

        async def one(scope: Scope, participant: str) -> tuple[TurnResult, str, float]:
            async with gate:
                return await runner(scope, participant)

        start = time.perf_counter()
        outcomes = await asyncio.gather(*(one(scope, participant) for scope, participant in prepared[warmup:]))
        wall = time.perf_counter() - start
        samples = [await self.sample(mode, concurrency, *outcome) for outcome in outcomes]
        latencies = sorted(s.total_ms for s in samples)
        keys = ("temporal", "postgres", "s3", "assembly", "other", "activities", "assembly_graph")
        split = {k: round(statistics.fmean(getattr(s, f"{k}_ms") for s in samples), 3) for k in keys}
        names = sorted({name for s in samples for name in s.activity_ms})
        per_activity = {name: round(sum(s.activity_ms.get(name, 0.0) for s in samples) / len(samples), 3)
                        for name in names}
        row = ThroughputRow(
            mode=mode, concurrency=concurrency, turns=turns, wall_s=round(wall, 4),
            turns_per_s=round(turns / wall, 3), latency_mean_ms=round(statistics.fmean(latencies), 3),
            latency_p50_ms=round(_percentile(latencies, 0.5), 3), latency_p95_ms=round(_percentile(latencies, 0.95), 3),
            split_mean_ms=split, activity_mean_ms=per_activity,
            answered=sum(1 for s in samples if s.status == "answered"),
        )
        self.progress(f"{mode} c={concurrency}: {row.turns_per_s:.2f} turns/s, p50 {row.latency_p50_ms:.0f} ms")
        return row, samples

    # ------------------------------------------------------------------ (b) history

    async def history(self, calls: int, kb: int) -> tuple[list[HistoryPoint], int, dict[str, dict[str, float]]]:
        scope, participant = await self.new_conversation("bench history growth")
        async with self.deps.sessions() as session:
            system_prompt = (await conversations.get_participant(session, self.account_id, participant)).system_prompt
        transcript = Transcript(system_prompt)
        points: list[HistoryPoint] = []
        encode = token_encoder()
        replay_prompts: list[Prompt] = []
        dossier_prompts: list[Prompt] = []
        turn = 0
        while len(points) < calls:
            turn += 1
            prompt = user_prompt(turn, kb)
            await self.say(scope, prompt)
            transcript.add({"role": "user", "content": prompt})
            result, workflow_id, _ = await self.temporal_turn(scope, participant)
            self.recorder.by_key.pop(workflow_id, None)
            if result.status != "answered" or not result.model_run_ids:
                raise RuntimeError(f"bench turn {turn} ended {result.status!r}: {result}")
            history = await self.client.get_workflow_handle(workflow_id).fetch_history()
            size, json_size, events, largest = history_size(history)
            turn_cf = 0
            for run_id in result.model_run_ids:
                if len(points) >= calls:
                    break
                cf_input = transcript.size
                replay_prompts.append(Prompt(message_blocks(transcript.messages, encode),
                                             transcript_breakpoints(transcript.messages)))
                dossier_prompts.append(await self._assembled_prompt(run_id, encode))
                transcript.history += cf_input
                turn_cf += cf_input
                message, results = await self._step_messages(run_id)
                transcript.add(message)
                transcript.history += message_bytes(message)
                turn_cf += message_bytes(message)
                for tool_message in results:
                    transcript.add(tool_message)
                    arguments = len(json_bytes(tool_message.pop("_arguments")))
                    result_bytes = len(json_bytes(tool_message["content"]))
                    transcript.history += arguments + result_bytes
                    turn_cf += arguments + result_bytes
                _, _, legacy, assembled = await self.assembly_ms([run_id])
                points.append(HistoryPoint(
                    call=len(points) + 1, turn=turn, workflow_id=workflow_id, history_bytes=size,
                    history_json_bytes=json_size, history_events=events, max_event_bytes=largest,
                    history_bytes_per_call=round(size / len(result.model_run_ids), 1),
                    legacy_tokens=legacy, assembled_tokens=assembled, cf_input_bytes=cf_input,
                    cf_history_conversation_bytes=transcript.history, cf_history_turn_bytes=turn_cf,
                ))
            if turn == 1 or turn % 10 == 0 or len(points) >= calls:
                self.progress(f"history: call {len(points)}, turn history {size_text(size)}, "
                              f"counterfactual input {size_text(points[-1].cf_input_bytes)}")
        return points, turn, billed_ratios(replay_prompts, dossier_prompts)

    async def _assembled_prompt(self, run_id: str, encode: Encode) -> Prompt:
        """What Dossier sent for a model run: the stored assembly's messages and its cache breakpoints."""
        async with self.deps.sessions() as session:
            run = await messages.get_model_run(session, self.account_id, run_id)
            stored = await get_context_assembly(session, self.account_id, run.context_assembly_id,
                                                with_messages=True)
        epoch = stored.record.epoch
        sent = list(stored.messages or ())
        return Prompt(message_blocks(sent, encode),
                      epoch.cache_breakpoints if epoch else transcript_breakpoints(sent))

    async def _step_messages(self, run_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The assistant message of a model run and its raw tool results, as OpenAI messages."""
        async with self.deps.sessions() as session:
            message = await messages.get_message(session, self.account_id, message_id_for(run_id))
            openai: dict[str, Any] = {"role": "assistant", "content": message.content or None}
            results = []
            if message.tool_calls:
                openai["tool_calls"] = [
                    {"id": call.call_id, "type": "function",
                     "function": {"name": wire_name(call.name), "arguments": json.dumps(call.arguments)}}
                    for call in message.tool_calls
                ]
                for call in message.tool_calls:
                    record = await tool_store.get_tool_call_by_call_id(session, self.account_id, call.call_id)
                    artifact = await tool_store.get_artifact_for_tool_call(session, self.account_id, record.id)
                    raw = await read_artifact_payload(session, self.deps.artifacts, self.account_id, artifact.id)
                    results.append({"role": "tool", "tool_call_id": call.call_id,
                                    "content": raw.decode("utf-8", errors="replace"),
                                    "_arguments": call.arguments})
        return openai, results

