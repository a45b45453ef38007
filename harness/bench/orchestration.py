"""Benchmark part 5: orchestration overhead and workflow history size.

(a) **Throughput and latency split.** End-to-end agent turns (the bench
model of :mod:`harness.bench.orchestration_agent` makes exactly three tool
calls, then answers: four model calls, fifteen activities) run through a
Temporal worker (``build_worker``) against a real Temporal dev server, on
the real Postgres and S3, sequentially and with N concurrent turns. The
*same* turn is then run in-process, without Temporal: the same
``TurnActivities`` methods called directly in the workflow's order (inside
``temporalio.testing.ActivityEnvironment``, which only provides
``activity.info()``), in the same run, on the same services.

Each turn's latency is split by instrumentation, not by guesswork:

* **activities**: a worker activity interceptor times every activity;
* **temporal** = turn wall time (client ``start_workflow`` to result) minus
  the time spent inside activities: scheduling, task queues, history writes,
  payload conversion, polling;
* **postgres**: time inside SQL statements (SQLAlchemy cursor-execute
  events; commits and pool checkouts are not counted);
* **s3**: time inside artifact-store calls (every S3 operation goes through
  ``ArtifactStore._call``);
* **assembly**: policy selection + rendering, from the timings each
  ``assemble_context`` stores with its ContextAssembly (its graph-query phase
  is Postgres time, already counted there, and reported separately);
* **other**: the rest of activity time (tool execution, derivation, token
  counting, the scripted model, pydantic).

(b) **History per model call.** One conversation grows to ``history_calls``
model calls, each tool returning ``result_kb`` KiB. After every turn the
turn's workflow history is fetched and measured (protobuf bytes of its
events, as the server counts them, and the JSON export): it stays flat
because workflows carry ids only. Alongside, the **counterfactual** for
frameworks that pass the transcript through activity inputs is *computed
from this run's own transcript* (the stored messages and raw tool results,
as OpenAI messages, JSON-encoded): what each model-call activity input would
be, and what a workflow history holding those inputs (plus the tool
results as activity results) would grow to, with the call at which it
crosses Temporal's 2 MiB payload limit and 50 MiB history limit. No other
framework is run.

Benchmarks measure; they never assert timings.
"""

from __future__ import annotations

import asyncio
import copy
import json
import math
import statistics
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import event
from temporalio import activity
from temporalio.client import Client, WorkflowHistory
from temporalio.client import Interceptor as ClientInterceptor
from temporalio.testing import ActivityEnvironment, WorkflowEnvironment
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput
from temporalio.worker import Interceptor as WorkerInterceptor

from activities.deps import GraphDeps
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
from harness.bench.orchestration_agent import (
    MODEL,
    MODEL_CALLS_PER_TURN,
    TOOL_CALLS_PER_TURN,
    bench_providers,
    bench_registry,
    user_prompt,
)
from dossier.settings import Settings
from activities.tools.registry import ToolRegistry, wire_name
from dossier.runtime import SAMPLE_WORKSPACE
from policy.enums import MessageRole, RuntimeKind
from store import conversations, messages
from store import tools as tool_store
from store.assemblies import get_context_assembly
from store.payloads import read_artifact_payload

PAYLOAD_LIMIT_BYTES = 2 * 1024 * 1024
"""Temporal's default per-payload error limit (``limit.blobSize.error``)."""
HISTORY_LIMIT_BYTES = 50 * 1024 * 1024
"""Temporal's default workflow history size error limit (``limit.historySize.error``)."""
HISTORY_REPORT_CALLS = (1, 50, 100, 200)
DEV_SERVER_ARGS = ("--dynamic-config-value", 'history.timerProcessorMaxTimeShift="10ms"')

Progress = Callable[[str], None]

# --------------------------------------------------------------------------- instrumentation


@dataclass
class TurnTiming:
    """Where one turn's time went (milliseconds, summed over its activities)."""

    activity_ms: dict[str, float] = field(default_factory=dict)
    activity_count: int = 0
    postgres_ms: float = 0.0
    postgres_statements: int = 0
    s3_ms: float = 0.0
    s3_calls: int = 0

    @property
    def activities_total_ms(self) -> float:
        return sum(self.activity_ms.values())

    def add_activity(self, name: str, ms: float) -> None:
        self.activity_ms[name] = self.activity_ms.get(name, 0.0) + ms
        self.activity_count += 1


_CURRENT: ContextVar[TurnTiming | None] = ContextVar("dossier_bench_turn_timing", default=None)


class _Recorder:
    """Turn timings by workflow id (Temporal) or turn key (in-process)."""

    def __init__(self) -> None:
        self.by_key: dict[str, TurnTiming] = {}

    def timing(self, key: str) -> TurnTiming:
        return self.by_key.setdefault(key, TurnTiming())


class _TimingActivityInbound(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, recorder: _Recorder) -> None:
        super().__init__(next)
        self._recorder = recorder

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        info = activity.info()
        timing = self._recorder.timing(info.workflow_id or "")
        token = _CURRENT.set(timing)
        start = time.perf_counter()
        try:
            return await super().execute_activity(input)
        finally:
            timing.add_activity(info.activity_type, (time.perf_counter() - start) * 1000)
            _CURRENT.reset(token)


class _TimingInterceptor(ClientInterceptor, WorkerInterceptor):
    """A client interceptor that workers built on the client also use: times every activity."""

    def __init__(self, recorder: _Recorder) -> None:
        self._recorder = recorder

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _TimingActivityInbound(next, self._recorder)


def _engine_of(deps: GraphDeps) -> Any:
    bind = deps.sessions.kw.get("bind")
    if bind is None:
        raise ValueError("the session factory has no bound engine to instrument")
    return bind.sync_engine if hasattr(bind, "sync_engine") else bind


@asynccontextmanager
async def _instrumented(deps: GraphDeps) -> AsyncIterator[GraphDeps]:
    """``deps`` with SQL statement and S3 call times added to the current turn's timing."""
    engine = _engine_of(deps)

    def before(conn, cursor, statement, parameters, context, executemany):  # noqa: ANN001
        if context is not None:
            context._dossier_bench_start = time.perf_counter()

    def after(conn, cursor, statement, parameters, context, executemany):  # noqa: ANN001
        timing = _CURRENT.get()
        started = getattr(context, "_dossier_bench_start", None)
        if timing is not None and started is not None:
            timing.postgres_ms += (time.perf_counter() - started) * 1000
            timing.postgres_statements += 1

    event.listen(engine, "before_cursor_execute", before)
    event.listen(engine, "after_cursor_execute", after)

    artifacts = copy.copy(deps.artifacts)
    original_call = deps.artifacts._call

    async def timed_call(fn, key=None):  # noqa: ANN001, ANN202
        start = time.perf_counter()
        try:
            return await original_call(fn, key)
        finally:
            timing = _CURRENT.get()
            if timing is not None:
                timing.s3_ms += (time.perf_counter() - start) * 1000
                timing.s3_calls += 1

    artifacts._call = timed_call  # type: ignore[method-assign]
    try:
        yield replace(deps, artifacts=artifacts)
    finally:
        event.remove(engine, "before_cursor_execute", before)
        event.remove(engine, "after_cursor_execute", after)


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class TurnSample:
    """One measured turn."""

    mode: str
    """``temporal`` or ``in_process``."""
    concurrency: int
    total_ms: float
    activities_ms: float
    temporal_ms: float
    postgres_ms: float
    s3_ms: float
    assembly_ms: float
    """Policy + render time of the turn's assemblies (stored ContextAssembly timings)."""
    assembly_graph_ms: float
    """Graph-query phase of the assemblies (Postgres; already inside ``postgres_ms``)."""
    other_ms: float
    activity_count: int
    postgres_statements: int
    s3_calls: int
    model_calls: int
    tool_calls: int
    status: str
    activity_ms: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class ThroughputRow:
    """Turns per second of one mode at one concurrency, and its mean latency split."""

    mode: str
    concurrency: int
    turns: int
    wall_s: float
    turns_per_s: float
    latency_mean_ms: float
    latency_p50_ms: float
    latency_p95_ms: float
    split_mean_ms: dict[str, float]
    """temporal, postgres, s3, assembly, other (and activities, assembly_graph)."""
    activity_mean_ms: dict[str, float]
    """Mean per-turn time in each activity type."""
    answered: int


@dataclass(frozen=True)
class HistoryPoint:
    """One model call of the growing conversation."""

    call: int
    """1-based model call number in the conversation."""
    turn: int
    workflow_id: str
    history_bytes: int
    """Protobuf size of that turn's whole workflow history (what Temporal's limit counts)."""
    history_json_bytes: int
    """Size of ``fetch_history().to_json()``."""
    history_events: int
    max_event_bytes: int
    """Largest single event of the turn's history (bounds any payload in it)."""
    history_bytes_per_call: float
    """``history_bytes`` / model calls in that turn."""
    legacy_tokens: int
    assembled_tokens: int
    cf_input_bytes: int
    """Counterfactual: the transcript (JSON messages) a framework would pass into this model-call activity."""
    cf_history_conversation_bytes: int
    """Counterfactual: activity payloads in the history after this call's step (its transcript input, the
    model's output, its tool calls' arguments and raw results), when one workflow runs the whole conversation."""
    cf_history_turn_bytes: int
    """Counterfactual: the same, counted within this turn's own workflow (one workflow per turn)."""


@dataclass(frozen=True)
class Crossing:
    """The first model call at which a counterfactual quantity exceeds a limit."""

    quantity: str
    limit_bytes: int
    call: int | None
    """``None``: not crossed within ``horizon`` calls."""
    extrapolated: bool
    """The crossing lies past the measured calls and was extrapolated from the measured growth."""
    horizon: int


@dataclass(frozen=True)
class OrchestrationReport:
    """Everything ``run_orchestration`` measured."""

    parameters: dict[str, Any]
    throughput: tuple[ThroughputRow, ...]
    samples: tuple[TurnSample, ...]
    ratios: dict[int, dict[str, float]]
    """Per concurrency: temporal and in-process turns/s and mean latency, and their ratios."""
    history: tuple[HistoryPoint, ...]
    crossings: tuple[Crossing, ...]
    history_turns: int
    run_seconds: float

    # ------------------------------------------------------------------ output

    def history_at(self, call: int) -> HistoryPoint | None:
        """The history point of model call ``call``, if measured."""
        for point in self.history:
            if point.call == call:
                return point
        return None

    def to_json(self) -> dict[str, Any]:
        """Everything as JSON-ready data (plot data included)."""
        return {
            "benchmark": "orchestration",
            "parameters": self.parameters,
            "run_seconds": round(self.run_seconds, 2),
            "throughput": [asdict(row) for row in self.throughput],
            "ratios": {str(key): value for key, value in self.ratios.items()},
            "samples": [asdict(sample) for sample in self.samples],
            "history": [asdict(point) for point in self.history],
            "history_turns": self.history_turns,
            "crossings": [asdict(crossing) for crossing in self.crossings],
            "counterfactual_note": COUNTERFACTUAL_NOTE,
            "plots": self.plot_data(),
        }

    def plot_data(self) -> dict[str, Any]:
        """Series for the two plots: history per call vs counterfactual (log y), turns/s bars."""
        return {
            "history": {
                "x_call": [p.call for p in self.history],
                "dossier_turn_history_bytes": [p.history_bytes for p in self.history],
                "counterfactual_activity_input_bytes": [p.cf_input_bytes for p in self.history],
                "counterfactual_conversation_workflow_history_bytes":
                    [p.cf_history_conversation_bytes for p in self.history],
                "counterfactual_turn_workflow_history_bytes": [p.cf_history_turn_bytes for p in self.history],
                "payload_limit_bytes": PAYLOAD_LIMIT_BYTES,
                "history_limit_bytes": HISTORY_LIMIT_BYTES,
                "y_scale": "log",
            },
            "throughput": {
                "concurrency": sorted({row.concurrency for row in self.throughput}),
                "series": {
                    mode: [row.turns_per_s for row in sorted(self.throughput, key=lambda r: r.concurrency)
                           if row.mode == mode]
                    for mode in ("temporal", "in_process")
                },
            },
        }

    def write_plots(self, directory: Path) -> list[Path]:
        """PNG plots (needs matplotlib, from the ``bench`` extra); returns the files written."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        directory.mkdir(parents=True, exist_ok=True)
        data = self.plot_data()
        written: list[Path] = []
        if self.history:
            series = data["history"]
            figure, axis = plt.subplots(figsize=(8, 5))
            x = series["x_call"]
            axis.plot(x, series["dossier_turn_history_bytes"], label="Dossier: workflow history of the turn (measured)")
            axis.plot(x, series["counterfactual_activity_input_bytes"], "--",
                      label="counterfactual: transcript as model-call activity input")
            axis.plot(x, series["counterfactual_turn_workflow_history_bytes"], "--",
                      label="counterfactual: history, one workflow per turn")
            axis.plot(x, series["counterfactual_conversation_workflow_history_bytes"], "--",
                      label="counterfactual: history, one workflow per conversation")
            axis.axhline(PAYLOAD_LIMIT_BYTES, color="grey", linestyle=":", label="2 MiB payload limit")
            axis.axhline(HISTORY_LIMIT_BYTES, color="black", linestyle=":", label="50 MiB history limit")
            axis.set_yscale("log")
            axis.set_xlabel("model call in the conversation")
            axis.set_ylabel("bytes")
            axis.set_title(f"Workflow history per model call ({self.parameters.get('result_kb')} KiB tool results)\n"
                           "counterfactual computed from this run's transcript, not by running another framework",
                           fontsize=9)
            axis.legend(fontsize=7)
            figure.tight_layout()
            path = directory / "orchestration_history.png"
            figure.savefig(path, dpi=120)
            plt.close(figure)
            written.append(path)
        if self.throughput:
            series = data["throughput"]
            figure, axis = plt.subplots(figsize=(6, 4))
            levels = series["concurrency"]
            width = 0.38
            for offset, mode in ((-width / 2, "temporal"), (width / 2, "in_process")):
                values = series["series"][mode]
                axis.bar([i + offset for i in range(len(values))], values, width, label=mode.replace("_", "-"))
            axis.set_xticks(range(len(levels)), [str(level) for level in levels])
            axis.set_xlabel("concurrent turns")
            axis.set_ylabel("turns / s (one worker)")
            axis.set_title("Agent turns per second (3 tool calls + answer)")
            axis.legend()
            figure.tight_layout()
            path = directory / "orchestration_throughput.png"
            figure.savefig(path, dpi=120)
            plt.close(figure)
            written.append(path)
        return written

    def to_markdown(self) -> str:
        """Tables: throughput, latency split, ratio, history per call, counterfactual crossings."""
        p = self.parameters
        lines = [
            "## Orchestration overhead and workflow history",
            "",
            f"One worker, real Temporal dev server, embedded Postgres + S3. A turn = {MODEL_CALLS_PER_TURN} model "
            f"calls + {TOOL_CALLS_PER_TURN} tool calls ({p.get('turn_result_kb')} KiB results), "
            f"{p.get('turns')} turns per level; run took {self.run_seconds:.1f} s.",
            "",
            "### Turns per second and latency split (mean ms per turn)",
            "",
            "| mode | concurrency | turns/s | p50 ms | p95 ms | temporal | postgres | s3 | assembly | other | "
            "(graph query) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for row in self.throughput:
            s = row.split_mean_ms
            lines.append(
                f"| {row.mode} | {row.concurrency} | {row.turns_per_s:.2f} | {row.latency_p50_ms:.1f} | "
                f"{row.latency_p95_ms:.1f} | {s['temporal']:.1f} | {s['postgres']:.1f} | {s['s3']:.1f} | "
                f"{s['assembly']:.1f} | {s['other']:.1f} | {s['assembly_graph']:.1f} |"
            )
        lines += [
            "",
            "temporal = turn wall time minus time inside activities; postgres = time in SQL statements; "
            "s3 = time in S3 calls; assembly = policy + render; other = rest of activity time; "
            "(graph query) = assembly's Postgres phase, part of postgres.",
            "",
            "### Temporal vs the same turn in-process",
            "",
            "| concurrency | temporal turns/s | in-process turns/s | in-process / temporal | "
            "temporal latency / in-process latency |",
            "|---:|---:|---:|---:|---:|",
        ]
        for level, ratio in sorted(self.ratios.items()):
            lines.append(
                f"| {level} | {ratio['temporal_turns_per_s']:.2f} | {ratio['in_process_turns_per_s']:.2f} | "
                f"{ratio['throughput_ratio']:.2f}x | {ratio['latency_ratio']:.2f}x |"
            )
        if self.history:
            wanted = sorted({c for c in (*HISTORY_REPORT_CALLS, self.history[-1].call) if self.history_at(c)})
            lines += [
                "",
                f"### Workflow history per model call ({p.get('result_kb')} KiB tool results, "
                f"{len(self.history)} calls, {self.history_turns} turns)",
                "",
                "| call | Dossier turn history | per model call | events | largest event | "
                "CF activity input | CF history (workflow per turn) | CF history (workflow per conversation) |",
                "|---:|---:|---:|---:|---:|---:|---:|---:|",
            ]
            for call in wanted:
                h = self.history_at(call)
                assert h is not None
                lines.append(
                    f"| {h.call} | {_size(h.history_bytes)} | {_size(h.history_bytes_per_call)} | "
                    f"{h.history_events} | {_size(h.max_event_bytes)} | {_size(h.cf_input_bytes)} | "
                    f"{_size(h.cf_history_turn_bytes)} | {_size(h.cf_history_conversation_bytes)} |"
                )
            sizes = [h.history_bytes for h in self.history]
            lines += [
                "",
                f"Dossier turn history: min {_size(min(sizes))}, max {_size(max(sizes))} over the conversation.",
                "",
                "Counterfactual crossing points (model call number):",
                "",
                "| quantity | limit | crossed at call |",
                "|---|---:|---:|",
            ]
            for crossing in self.crossings:
                where = ("not within " + str(crossing.horizon)) if crossing.call is None else (
                    f"~{crossing.call} (extrapolated)" if crossing.extrapolated else str(crossing.call))
                lines.append(f"| {crossing.quantity} | {_size(crossing.limit_bytes)} | {where} |")
            lines += ["", f"CF = counterfactual. {COUNTERFACTUAL_NOTE}"]
        return "\n".join(lines) + "\n"


COUNTERFACTUAL_NOTE = (
    "The counterfactual is computed from this run's own transcript sizes (stored messages and raw tool results, "
    "as JSON-encoded OpenAI messages), not by running another framework: it is what a framework that passes the "
    "transcript through each model-call activity input (and returns raw tool results as activity results) would "
    "put into the workflow history. Event framing overhead is not counted, so it is a lower bound."
)


def _size(n: float) -> str:
    if n >= 1024 * 1024:
        return f"{n / 1024 / 1024:.1f} MiB"
    if n >= 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n:.0f} B"


# --------------------------------------------------------------------------- the bench


@dataclass
class _Bench:
    client: Client
    deps: GraphDeps
    """Instrumented dependencies (the worker's, with the tool catalog)."""
    tools: ToolRegistry
    task_queue: str
    recorder: _Recorder
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
            await messages.append_message(session, self.account_id, scope.conversation_id, scope.branch_id,
                                          role=MessageRole.USER, content=text)

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
            token = _CURRENT.set(timing)
            began = time.perf_counter()
            try:
                return await environment.run(fn, argument)
            finally:
                timing.add_activity(name, (time.perf_counter() - began) * 1000)
                _CURRENT.reset(token)

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

    async def history(self, calls: int, kb: int) -> tuple[list[HistoryPoint], int]:
        scope, participant = await self.new_conversation("bench history growth")
        async with self.deps.sessions() as session:
            system_prompt = (await conversations.get_participant(session, self.account_id, participant)).system_prompt
        transcript = _Transcript(system_prompt)
        points: list[HistoryPoint] = []
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
            size, json_size, events, largest = _history_size(history)
            turn_cf = 0
            for run_id in result.model_run_ids:
                if len(points) >= calls:
                    break
                cf_input = transcript.size
                transcript.history += cf_input
                turn_cf += cf_input
                message, results = await self._step_messages(run_id)
                transcript.add(message)
                transcript.history += message_bytes(message)
                turn_cf += message_bytes(message)
                for tool_message in results:
                    transcript.add(tool_message)
                    arguments = len(_json_bytes(tool_message.pop("_arguments")))
                    result_bytes = len(_json_bytes(tool_message["content"]))
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
                self.progress(f"history: call {len(points)}, turn history {_size(size)}, "
                              f"counterfactual input {_size(points[-1].cf_input_bytes)}")
        return points, turn

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


class _Transcript:
    """The running size of the transcript as a JSON list of OpenAI messages."""

    def __init__(self, system_prompt: str) -> None:
        self.size = 2  # "[]"
        self.count = 0
        self.history = 0
        if system_prompt:
            self.add({"role": "system", "content": system_prompt})

    def add(self, message: dict[str, Any]) -> None:
        visible = {k: v for k, v in message.items() if not k.startswith("_")}
        self.size += message_bytes(visible) + (1 if self.count else 0)
        self.count += 1


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def message_bytes(message: dict[str, Any]) -> int:
    """Bytes of one OpenAI message as compact JSON."""
    return len(_json_bytes({k: v for k, v in message.items() if not k.startswith("_")}))


def _history_size(history: WorkflowHistory) -> tuple[int, int, int, int]:
    sizes = [event.ByteSize() for event in history.events]
    return sum(sizes), len(history.to_json().encode()), len(sizes), max(sizes, default=0)


def _percentile(sorted_values: Sequence[float], q: float) -> float:
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, max(0, math.ceil(q * len(sorted_values)) - 1))
    return sorted_values[index]


def crossings(points: Sequence[HistoryPoint], horizon: int = 100_000) -> tuple[Crossing, ...]:
    """The counterfactual's crossing points of the 2 MiB payload and 50 MiB history limits.

    Past the measured calls the growth is extrapolated: the transcript keeps
    growing by the mean bytes per call measured, and the turn pattern (model
    calls per turn) repeats.
    """
    series = {
        "activity input (one payload)": ([p.cf_input_bytes for p in points], PAYLOAD_LIMIT_BYTES),
        "history, one workflow per turn": ([p.cf_history_turn_bytes for p in points], HISTORY_LIMIT_BYTES),
        "history, one workflow per conversation": ([p.cf_history_conversation_bytes for p in points],
                                                   HISTORY_LIMIT_BYTES),
    }
    out = []
    for name, (values, limit) in series.items():
        measured = next((i + 1 for i, v in enumerate(values) if v > limit), None)
        if measured is not None or len(points) < 2:
            out.append(Crossing(quantity=name, limit_bytes=limit, call=measured, extrapolated=False,
                                horizon=len(points)))
            continue
        out.append(Crossing(quantity=name, limit_bytes=limit, call=_extrapolate(points, name, limit, horizon),
                            extrapolated=True, horizon=horizon))
    return tuple(out)


def _extrapolate(points: Sequence[HistoryPoint], name: str, limit: int, horizon: int) -> int | None:
    growth = (points[-1].cf_input_bytes - points[0].cf_input_bytes) / (len(points) - 1)
    if growth <= 0:
        return None
    per_turn = max(sum(1 for p in points if p.turn == points[0].turn), 1)
    size = points[-1].cf_input_bytes
    conversation = points[-1].cf_history_conversation_bytes
    turn_total = points[-1].cf_history_turn_bytes
    call = points[-1].call
    position = sum(1 for p in points if p.turn == points[-1].turn)
    while call < horizon:
        call += 1
        size += growth
        position = position % per_turn + 1
        turn_total = (0 if position == 1 else turn_total) + size + growth
        conversation += size + growth
        value = {"activity input (one payload)": size, "history, one workflow per turn": turn_total,
                 "history, one workflow per conversation": conversation}[name]
        if value > limit:
            return call
    return None


# --------------------------------------------------------------------------- entry point


async def run_orchestration(
    settings: Settings | None = None,
    *,
    turns: int = 48,
    concurrency: Sequence[int] = (1, 4, 16),
    history_calls: int = 200,
    result_kb: int = 200,
    turn_result_kb: int | None = None,
    warmup: int = 2,
    client: Client | None = None,
    env: WorkflowEnvironment | None = None,
    deps: GraphDeps | None = None,
    task_queue: str | None = None,
    progress: Progress | None = None,
    quick: bool = False,
) -> OrchestrationReport:
    """Run the orchestration benchmark.

    Args:
        settings: configuration for the embedded services (used only for what is not passed in).
        turns: measured turns per (mode, concurrency).
        concurrency: concurrent turn levels; each runs ``turns`` turns per mode.
        history_calls: model calls in the growing conversation of part (b) (0 skips it).
        result_kb: KiB per tool result in part (b).
        turn_result_kb: KiB per tool result in part (a) (default: ``result_kb``).
        warmup: unmeasured turns before each level.
        client: a Temporal client (pydantic data converter) to use instead of starting a dev server.
        env: a started ``WorkflowEnvironment`` (its client is used).
        deps: graph dependencies to use instead of ``open_graph(settings)``.
        task_queue: the worker's task queue (default: a fresh one).
        progress: called with one-line progress reports.
        quick: a tiny run for tests (3 turns, concurrency 1 and 2, 6 history calls, 4 KiB results).

    Returns:
        The report.
    """
    if quick:
        turns, concurrency, history_calls, result_kb, warmup = min(turns, 3), (1, 2), min(history_calls, 6), \
            min(result_kb, 4), min(warmup, 1)
    kb_a = result_kb if turn_result_kb is None else turn_result_kb
    settings = settings or Settings()
    report_progress = progress or (lambda _line: None)
    started = time.perf_counter()
    async with AsyncExitStack() as stack:
        if client is None and env is not None:
            client = env.client
        if client is None:
            from temporalio.contrib.pydantic import pydantic_data_converter

            from dossier.services.process import find_binary

            env = await WorkflowEnvironment.start_local(
                dev_server_existing_path=str(find_binary("temporal")), data_converter=pydantic_data_converter,
                ui=False, dev_server_extra_args=list(DEV_SERVER_ARGS),
            )
            stack.push_async_callback(env.shutdown)
            client = env.client
        if deps is None:
            from dossier.runtime import open_graph

            deps = await stack.enter_async_context(open_graph(settings))
        recorder = _Recorder()
        timed_client = Client(**{**client.config(), "interceptors": [_TimingInterceptor(recorder)]})
        tools = bench_registry()
        instrumented = await stack.enter_async_context(_instrumented(deps))
        instrumented = replace(instrumented, catalog=tools.catalog())
        async with instrumented.sessions() as session, session.begin():
            account_id = await conversations.create_account(session, name="orchestration bench")
        queue = task_queue or f"dossier-bench-orch-{uuid.uuid4().hex[:8]}"

        from dossier.runtime import build_worker

        worker = build_worker(timed_client, instrumented, task_queue=queue, tools=tools, providers=bench_providers)
        bench = _Bench(client=timed_client, deps=instrumented, tools=tools, task_queue=queue, recorder=recorder,
                       account_id=account_id, progress=report_progress)
        rows: list[ThroughputRow] = []
        samples: list[TurnSample] = []
        async with worker:
            for level in concurrency:
                for mode in ("temporal", "in_process"):
                    row, measured = await bench.throughput(mode, level, turns, kb_a, warmup)
                    rows.append(row)
                    samples.extend(measured)
            points, history_turns = (await bench.history(history_calls, result_kb)) if history_calls else ([], 0)
    ratios: dict[int, dict[str, float]] = {}
    for level in concurrency:
        by_mode = {row.mode: row for row in rows if row.concurrency == level}
        temporal, local = by_mode["temporal"], by_mode["in_process"]
        ratios[level] = {
            "temporal_turns_per_s": temporal.turns_per_s,
            "in_process_turns_per_s": local.turns_per_s,
            "throughput_ratio": round(local.turns_per_s / temporal.turns_per_s, 3) if temporal.turns_per_s else 0.0,
            "temporal_latency_ms": temporal.latency_mean_ms,
            "in_process_latency_ms": local.latency_mean_ms,
            "latency_ratio": round(temporal.latency_mean_ms / local.latency_mean_ms, 3)
            if local.latency_mean_ms else 0.0,
        }
    return OrchestrationReport(
        parameters={
            "turns": turns, "concurrency": list(concurrency), "history_calls": history_calls,
            "result_kb": result_kb, "turn_result_kb": kb_a, "warmup": warmup, "quick": quick,
            "model_calls_per_turn": MODEL_CALLS_PER_TURN, "tool_calls_per_turn": TOOL_CALLS_PER_TURN,
            "inline_max_bytes": deps.inline_max_bytes, "policy_version": deps.policy.version_tag,
            "payload_limit_bytes": PAYLOAD_LIMIT_BYTES, "history_limit_bytes": HISTORY_LIMIT_BYTES,
        },
        throughput=tuple(rows),
        samples=tuple(samples),
        ratios=ratios,
        history=tuple(points),
        crossings=crossings(points) if points else (),
        history_turns=history_turns,
        run_seconds=time.perf_counter() - started,
    )


async def _main() -> None:  # pragma: no cover - manual entry point
    import argparse
    import sys

    parser = argparse.ArgumentParser(description="Orchestration overhead and workflow history benchmark")
    parser.add_argument("--turns", type=int, default=48)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--history-calls", type=int, default=200)
    parser.add_argument("--result-kb", type=int, default=200)
    parser.add_argument("--turn-result-kb", type=int, default=None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, default=Path("bench-results"))
    args = parser.parse_args()
    report = await run_orchestration(
        Settings(), turns=args.turns, concurrency=tuple(args.concurrency), history_calls=args.history_calls,
        result_kb=args.result_kb, turn_result_kb=args.turn_result_kb, quick=args.quick,
        progress=lambda line: print(line, file=sys.stderr, flush=True),
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "orchestration.json").write_text(json.dumps(report.to_json(), indent=2))
    (args.out / "orchestration.md").write_text(report.to_markdown())
    try:
        report.write_plots(args.out)
    except ImportError:
        print("matplotlib not installed: no plots", file=sys.stderr)
    print(report.to_markdown())


if __name__ == "__main__":  # pragma: no cover
    asyncio.run(_main())


__all__ = [
    "COUNTERFACTUAL_NOTE",
    "HISTORY_LIMIT_BYTES",
    "PAYLOAD_LIMIT_BYTES",
    "Crossing",
    "HistoryPoint",
    "OrchestrationReport",
    "ThroughputRow",
    "TurnSample",
    "TurnTiming",
    "crossings",
    "run_orchestration",
]
