"""`dossier bench traces [--traces PATH] [--json] [--limit N]`: real trajectories, replay vs. peers vs. Dossier.

Every trajectory is imported into the configured (or embedded) Postgres and
S3 incrementally through the live capture and derivation code; at each model
call Dossier's context is assembled from the graph as it stood before that
call, and each peer strategy (LangChain trim_messages and ClearToolUsesEdit,
the OpenAI Agents SDK's ToolOutputTrimmer, Anthropic's clear_tool_uses) gets
the transcript before it. Reported per strategy: prompt and history tokens as
ratios to full replay, and recall of carried and user references as defined in
the traces README.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from harness.bench.traces import DEFAULT_TRACES, run_traces
from dossier.settings import Settings


def register_traces(actions: argparse._SubParsersAction) -> None:
    """Add the `traces` action to `dossier bench`'s sub-parsers (``actions``)."""
    traces = actions.add_parser(
        "traces",
        help="real tool-using trajectories: tokens and carried-reference recall vs. peer strategies",
        description=__doc__.split("\n\n", 1)[1],
    )
    traces.add_argument("--traces", default=str(DEFAULT_TRACES), metavar="PATH",
                        help=f"JSONL file of trajectories (default: $DOSSIER_TRACES, else {DEFAULT_TRACES})")
    traces.add_argument("--json", action="store_true", help="print one JSON object keyed by strategy")
    traces.add_argument("--limit", type=int, default=None, metavar="N", help="only the first N trajectories")
    traces.add_argument("--concurrency", type=int, default=4, metavar="N",
                        help="trajectories imported at once (default 4)")
    traces.set_defaults(handler=_traces)


def _traces(args: argparse.Namespace) -> int:
    try:
        report = asyncio.run(run_traces(Settings(), args.traces, args.limit, args.concurrency))
    except (OSError, ValueError) as error:
        print(f"dossier: error: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(report.to_markdown())
    return 0
