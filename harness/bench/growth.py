"""Benchmark part 4: cost of context assembly as one conversation's history grows.

For every configuration (history size x branch count x participant count) a
fresh account gets one conversation whose history is written through the
store's own writers (:mod:`harness.bench.growth_graph`: the bulk path
:class:`store.bulk.GraphBatch` for the turns, the single-row functions for
the rest): user and assistant messages, model runs, tool calls with their
attempt history, artifacts with inline JSON or text payloads of 0.5-4 KB
(:mod:`harness.bench.growth_data`), and the tool memories
:func:`policy.derive.derive_memory` derives from them, with supersession
links and branch forks. Writing the history is only the setup: **assembly
itself goes through the normal code path**,
:func:`activities.context.assemble_context` (load the bounded candidate pool,
select, render, persist the assembly), and its own timings give the split
between graph query, policy and serialisation.

The baseline is transcript replay as a caller pays for it
(:mod:`harness.bench.growth_replay`). At the largest size, the
candidate-loading SQL of one assembly is re-run under
``EXPLAIN (ANALYZE, BUFFERS)`` (:mod:`harness.bench.growth_explain`). Results,
tables and plots: :mod:`harness.bench.growth_report`.

Benchmarks measure; they never assert timings.

Run: ``python -m harness.bench.growth [--quick] [--out bench-results]``.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

from activities.context import assemble_context
from activities.deps import GraphDeps
from dossier.settings import Settings
from policy.enums import RuntimeKind
from policy.records import GenerationBoundary

from harness.bench.growth_data import ResultCache
from harness.bench.growth_explain import ExplainedQuery, explain_candidate_queries
from harness.bench.growth_graph import GrowthConfig, LoadedHistory, delete_history, load_history
from harness.bench.growth_replay import replay_transcript
from harness.bench.growth_report import ConfigResult, GrowthReport, stats

DEFAULT_SIZES = (100, 1_000, 10_000, 100_000)
DEFAULT_BRANCHES = (1, 20, 200)
DEFAULT_PARTICIPANTS = (2, 20)
QUICK_SIZES = (20, 60)
QUICK_BRANCHES = (1, 3)
QUICK_PARTICIPANTS = (2, 3)


async def measure_config(
    deps: GraphDeps,
    config: GrowthConfig,
    cache: ResultCache,
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
            assembly={k: stats(v) for k, v in timings.items()},
            candidates=candidates,
            assembled_tokens=last.result.record.assembled_tokens,
            legacy_tokens_recorded=last.result.record.legacy_tokens,
            replay={k: stats([r[k] for r in replays]) for k in ("total_ms", "load_ms", "build_ms", "count_ms")},
            replay_tokens=int(replays[0]["tokens"]),
            replay_messages=int(replays[0]["messages"]),
            explain=explained,
        )
    finally:
        if cleanup:
            await delete_history(deps, loaded.account_id)


@asynccontextmanager
async def _deps_for(settings: Settings | None, deps: GraphDeps | None) -> AsyncIterator[GraphDeps]:
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
        cache = ResultCache(graph.counter, seed)
        cache.ensure(max(sizes))
        for size in sizes:
            for b in branches:
                for p in participants:
                    config = GrowthConfig(size=size, branches=b, participants=p)
                    result = await measure_config(graph, config, cache, samples=samples, warmup=warmup,
                                            replay_samples=replay_samples, replay_budget_s=replay_budget_s,
                                            explain=size in explain_sizes, cleanup=cleanup, seed=seed)
                    results.append(result)
                    if progress is not None:
                        a = result.assembly
                        progress(f"{config}: setup {result.load_seconds:.1f}s, assemble p50 "
                                 f"{a['assemble_ms']['p50']:.1f} ms p99 {a['assemble_ms']['p99']:.1f} ms, "
                                 f"replay median {result.replay['total_ms']['p50']:.0f} ms "
                                 f"(n={result.replay['total_ms']['n']})")
        limits = asdict(graph.limits)
    notes = [
        "Setup used the store's bulk loader (store.bulk.GraphBatch: each branch's turns queued in the live "
        "path's order, one seq block and one bulk write (COPY) per table; accounts, participants, forks, user "
        "memories, skill states and checkpoints through the single-row store functions; ANALYZE after loading). "
        "Assembly itself goes through the normal code path: activities.context.assemble_context (load_candidates, "
        "select_context, render_context, save_context_assembly).",
        "One conversation per configuration, each in a fresh account. Branches form a chain; branch b forks "
        "from b-1 at 85% of b-1's own turns (the rest is a sibling tail off the active lineage). The measured "
        "call is a chat turn of the first assistant on the last branch, route 'local', no evidence requests.",
        "Payloads are 0.5-4 KB JSON / text / markdown (orders, CI logs, calendar, files; ~2.4% failed calls "
        "with tracebacks), stored inline; memories derived by policy.derive.derive_memory; a same-subject "
        "result on the same branch supersedes the earlier one (a failure only an earlier failure).",
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
    parser.add_argument("--from-json", type=Path, default=None,
                        help="rewrite growth.md, growth.json and the plots from a stored growth.json (no run)")
    args = parser.parse_args(argv)

    def progress(line: str) -> None:
        print(line, flush=True)

    if args.from_json is not None:
        report = GrowthReport.from_json(args.from_json.read_text())
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "growth.md").write_text(report.to_markdown().rstrip() + "\n")  # as the suite writes it
        (args.out / "growth.json").write_text(report.to_json())
        report.write_plots(args.out)
        print(report.to_markdown())
        return
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
    "DEFAULT_BRANCHES",
    "DEFAULT_PARTICIPANTS",
    "DEFAULT_SIZES",
    "QUICK_BRANCHES",
    "QUICK_PARTICIPANTS",
    "QUICK_SIZES",
    "ConfigResult",
    "ExplainedQuery",
    "GrowthConfig",
    "GrowthReport",
    "LoadedHistory",
    "delete_history",
    "explain_candidate_queries",
    "load_history",
    "measure_config",
    "replay_transcript",
    "run_growth",
    "run_quick",
]
