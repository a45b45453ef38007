"""`dossier bench cache-check`: the billing simulation's cache predictions against the embedded llama.cpp server.

A few trajectories whose prompts fit the local model's context are imported
as the traces benchmark imports them; each call's actual prompt, for full
replay and for Dossier's assembly, is sent to the model server (one slot,
``cache_prompt`` on, one output token, temperature 0), and the prompt-cache
reuse the server reports is compared with the ``LLAMA_CPP_SLOT`` rule's
prediction. Writes cache_check.json and cache_check.md. Slow: the model
evaluates every uncached prompt token on the CPU (about 10-45 tokens/s), so
the default sample (8 trajectories, 98 requests) takes about 22 minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from dossier.settings import Settings
from harness.bench.suite import DEFAULT_OUT
from harness.bench.traces import DEFAULT_TRACES


def register_cache_check(actions: argparse._SubParsersAction) -> None:
    """Add the `cache-check` action to `dossier bench`'s sub-parsers (``actions``)."""
    check = actions.add_parser(
        "cache-check",
        help="prompt-cache reuse predicted by the billing simulation vs. reported by the embedded llama.cpp server",
        description=__doc__.split("\n\n", 1)[1],
    )
    check.add_argument("--traces", default=str(DEFAULT_TRACES), metavar="PATH",
                       help=f"JSONL file of trajectories (default: $DOSSIER_TRACES, else {DEFAULT_TRACES})")
    check.add_argument("--trajectories", type=int, default=8, metavar="N", help="trajectories sampled (default 8)")
    check.add_argument("--max-prompt-tokens", type=int, default=3000, metavar="N",
                       help="largest prompt a sampled trajectory may send, in benchmark tokens (default 3000)")
    check.add_argument("--max-calls", type=int, default=8, metavar="N",
                       help="most model calls a sampled trajectory may have (default 8)")
    check.add_argument("--out", default=str(DEFAULT_OUT), metavar="DIR",
                       help=f"where cache_check.json/.md go (default {DEFAULT_OUT})")
    check.set_defaults(handler=_cache_check)


def _cache_check(args: argparse.Namespace) -> int:
    from harness.bench.cache_check import CacheCheckError, run_cache_check

    if min(args.trajectories, args.max_prompt_tokens, args.max_calls) < 1:
        print("dossier: error: --trajectories, --max-prompt-tokens and --max-calls must be positive", file=sys.stderr)
        return 2
    try:
        report = asyncio.run(run_cache_check(
            Settings(), args.traces, trajectories=args.trajectories, max_prompt_tokens=args.max_prompt_tokens,
            max_calls=args.max_calls, progress=lambda line: print(line, file=sys.stderr, flush=True)))
    except (OSError, ValueError, CacheCheckError) as error:
        print(f"dossier: error: {error}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "cache_check.json").write_text(json.dumps(report.to_json(), indent=2) + "\n", encoding="utf-8")
    markdown = report.to_markdown()
    (out / "cache_check.md").write_text(markdown, encoding="utf-8")
    print(markdown)
    return 0
