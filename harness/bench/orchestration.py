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

Modules: :mod:`~harness.bench.orchestration_bench` (the turns and both
measurements), :mod:`~harness.bench.orchestration_timing` (activity, SQL and
S3 timers), :mod:`~harness.bench.orchestration_history` (the counterfactual),
:mod:`~harness.bench.orchestration_report` and
:mod:`~harness.bench.orchestration_plots` (results, tables, plots).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import replace
from pathlib import Path

from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from activities.deps import GraphDeps
from dossier.settings import Settings
from dossier.visibility import dev_server_args
from store import conversations

from harness.bench.orchestration_agent import (
    MODEL_CALLS_PER_TURN,
    TOOL_CALLS_PER_TURN,
    bench_providers,
    bench_registry,
)
from harness.bench.orchestration_bench import Bench, Progress
from harness.bench.orchestration_history import crossings, message_bytes
from harness.bench.orchestration_report import (
    COUNTERFACTUAL_NOTE,
    HISTORY_LIMIT_BYTES,
    PAYLOAD_LIMIT_BYTES,
    Crossing,
    HistoryPoint,
    OrchestrationReport,
    ThroughputRow,
    TurnSample,
)
from harness.bench.orchestration_timing import Recorder, TimingInterceptor, TurnTiming, instrumented

DEV_SERVER_ARGS = ("--dynamic-config-value", 'history.timerProcessorMaxTimeShift="10ms"', *dev_server_args())
"""Temporal dev server flags: fire timers promptly."""


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
        recorder = Recorder()
        timed_client = Client(**{**client.config(), "interceptors": [TimingInterceptor(recorder)]})
        tools = bench_registry()
        timed_deps = await stack.enter_async_context(instrumented(deps))
        timed_deps = replace(timed_deps, catalog=tools.catalog())
        async with timed_deps.sessions() as session, session.begin():
            account_id = await conversations.create_account(session, name="orchestration bench")
        queue = task_queue or f"dossier-bench-orch-{uuid.uuid4().hex[:8]}"

        from dossier.runtime import build_worker

        worker = build_worker(timed_client, timed_deps, task_queue=queue, tools=tools, providers=bench_providers)
        bench = Bench(client=timed_client, deps=timed_deps, tools=tools, task_queue=queue, recorder=recorder,
                       account_id=account_id, progress=report_progress)
        rows: list[ThroughputRow] = []
        samples: list[TurnSample] = []
        async with worker:
            for level in concurrency:
                for mode in ("temporal", "in_process"):
                    row, measured = await bench.throughput(mode, level, turns, kb_a, warmup)
                    rows.append(row)
                    samples.extend(measured)
            points, history_turns, billed = (await bench.history(history_calls, result_kb)) if history_calls \
                else ([], 0, {})
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
        billed=billed,
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
        from harness.bench.orchestration_plots import write_plots

        write_plots(report, args.out)
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
    "message_bytes",
    "run_orchestration",
]
