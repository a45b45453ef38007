"""`dossier bench scenarios [--json]`: the seed scenarios, legacy replay vs assembled context.

Every scenario is written into the configured (or embedded) Postgres and S3
through the live capture and derivation code, assembled, persisted, and
scored: tokens of full transcript replay against tokens of Dossier's
context, and whether every required fact is present and every forbidden
one absent. The exit code is 1 when any scenario fails its fact checks.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
from pathlib import Path

from harness.bench.suite import DEFAULT_OUT, PARTS, run_suite
from harness.commands.bench_cache import register_cache_check
from harness.commands.bench_traces import register_traces
from dossier.runtime import open_graph
from harness.scenarios import all_scenarios
from harness.scenarios.runner import run_scenario
from harness.bench.scenario_rows import Row, format_markdown, scenario_row
from dossier.settings import Settings


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `bench` and its `scenarios` action."""
    parser = subparsers.add_parser("bench", help="run benchmarks and print their tables")
    actions = parser.add_subparsers(title="benchmarks", metavar="BENCHMARK", required=True)
    scenarios = actions.add_parser(
        "scenarios",
        help="the 17 seed scenarios: legacy replay tokens vs assembled tokens, fact checks",
        description=__doc__.split("\n\n", 1)[1],
    )
    output = scenarios.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print one JSON list instead of the table")
    output.add_argument("--markdown", action="store_true", help="print the table as Markdown rows")
    scenarios.add_argument("names", nargs="*", metavar="NAME", help="only these scenarios (default: all)")
    scenarios.set_defaults(handler=_scenarios)

    register_traces(actions)
    register_cache_check(actions)

    suite = actions.add_parser(
        "all",
        help="every benchmark part: tables, JSON and PNG plots into a results folder",
        description="Parts: traces (real trajectories vs the peers' own code), scenarios (seed scenarios through "
                    "every strategy), growth (assembly cost up to 100k artifacts), orchestration (Temporal "
                    "overhead and workflow history). Writes <part>.md/.json/.png and an index README.md.",
    )
    suite.add_argument("--out", default=str(DEFAULT_OUT), metavar="DIR", help=f"results folder (default {DEFAULT_OUT})")
    suite.add_argument("--parts", default=",".join(PARTS), metavar="LIST",
                       help=f"comma-separated subset of {','.join(PARTS)}")
    suite.add_argument("--traces", metavar="PATH", help="trajectory file for the traces part")
    suite.add_argument("--quick", action="store_true", help="tiny inputs: checks the benchmark runs, not results")
    suite.set_defaults(handler=_suite)


async def run_benchmark(settings: Settings, names: list[str] | None = None) -> list[Row]:
    """Run the named scenarios (all by default) against the configured services.

    Args:
        settings: the configuration; embedded services are started when no URL is set.
        names: scenario names to run.

    Returns:
        One row per scenario, in catalogue order.

    Raises:
        KeyError: an unknown scenario name.
    """
    scenarios = all_scenarios()
    if names:
        known = {s.name for s in scenarios}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise KeyError(f"unknown scenario(s) {unknown}; known: {sorted(known)}")
        scenarios = [s for s in scenarios if s.name in names]
    rows: list[Row] = []
    # inline_max_bytes=0: every payload takes the S3 path, as a large one would.
    async with open_graph(settings, inline_max_bytes=0) as deps:
        for scenario in scenarios:
            rows.append(scenario_row(await run_scenario(scenario, deps)))
    return rows


def format_table(rows: list[Row]) -> str:
    """The benchmark as a fixed-width table with a summary line."""
    header = f"{'scenario':<36} {'legacy':>7} {'dossier':>8} {'reduction':>9}  {'required':>8}  {'leaks':>5}  {'ms':>6}"
    lines = [header, "-" * len(header)]
    for row in rows:
        kept = f"{row.required_total - len(row.required_missing)}/{row.required_total}"
        ms = row.graph_query_ms + row.policy_ms + row.serialise_ms
        lines.append(
            f"{row.name:<36} {row.legacy_tokens:>7} {row.assembled_tokens:>8} {row.reduction:>9.1%}  "
            f"{kept:>8}  {len(row.forbidden_present):>5}  {ms:>6.1f}"
        )
    if rows:
        legacy = sum(r.legacy_tokens for r in rows)
        assembled = sum(r.assembled_tokens for r in rows)
        reductions = [r.reduction for r in rows]
        lines.append("-" * len(header))
        lines.append(
            f"{'total':<36} {legacy:>7} {assembled:>8} {1 - assembled / legacy:>9.1%}  "
            f"{'':>8}  {sum(len(r.forbidden_present) for r in rows):>5}"
        )
        lines.append(
            f"reduction per scenario: min {min(reductions):.1%}, median {statistics.median(reductions):.1%}, "
            f"max {max(reductions):.1%}; {sum(r.reduction >= 0.9 for r in rows)}/{len(rows)} at 90% or more"
        )
        lines.append(f"policy {rows[0].policy_version}; ms = graph query + policy + serialise of the measured call")
        for row in rows:
            for fact in row.required_missing:
                lines.append(f"MISSING  {row.name}: {fact!r}")
            for fact in row.forbidden_present:
                lines.append(f"LEAKED   {row.name}: {fact!r}")
    return "\n".join(lines)


def _suite(args: argparse.Namespace) -> int:
    parts = [part.strip() for part in args.parts.split(",") if part.strip()]
    unknown = [part for part in parts if part not in PARTS]
    if unknown:
        print(f"dossier: error: unknown part(s) {unknown}; known: {', '.join(PARTS)}", file=sys.stderr)
        return 2
    if {"traces", "ablations"} & set(parts):
        from harness.bench.traces import DEFAULT_TRACES

        trajectories = Path(args.traces or DEFAULT_TRACES)
        if not trajectories.is_file():  # fail before the other parts run, not after
            print(f"dossier: error: no trajectory file at {trajectories}: pass --traces PATH or set "
                  "DOSSIER_TRACES", file=sys.stderr)
            return 2
    results = asyncio.run(run_suite(Settings(), Path(args.out), parts=parts, quick=args.quick,
                                    traces=args.traces, progress=lambda line: print(line, file=sys.stderr)))
    for result in results:
        print(f"{result.name}: {result.seconds:.0f} s -> " + ", ".join(str(p) for p in result.files))
    print(f"index: {Path(args.out) / 'README.md'}")
    return 0


def _scenarios(args: argparse.Namespace) -> int:
    try:
        rows = asyncio.run(run_benchmark(Settings(), args.names or None))
    except KeyError as error:
        print(f"dossier: error: {error.args[0]}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([row.to_json() for row in rows], indent=2))
    elif args.markdown:
        print(format_markdown(rows))
    else:
        print(format_table(rows))
    return 0 if all(row.ok for row in rows) else 1
