"""`dossier harden [--quick] [--json] [--out DIR]`: the hardening suite of issue 11.

Isolation (every read path with another account's and participant's ids),
taint properties, a hostile tool-output corpus, fuzzing of the public entry
points, bad CLI input, and faults against a real stack (worker killed
mid-activity, Postgres and Temporal restarted, S3 unreachable). Everything
runs on embedded services started in a private temporary home, so the
checkout's own services are never touched.

Exit code: 0 when every figure was measured and none is bad; 1 when any
violation, elevation, loss, duplicate, crash or unclean bad input was found;
2 when a part could not run (its figures are printed as missing).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from harness.harden.report import format_table
from harness.harden.suite import PARTS, run


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `harden`."""
    parser = subparsers.add_parser("harden", help="run the hardening suite and print its figures",
                                   description=__doc__.split("\n\n", 1)[1],
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small inputs (CI): every part, fewer cases")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    parser.add_argument("--out", metavar="DIR", help="also write harden.json and harden.md into DIR")
    parser.add_argument("--parts", default=",".join(PARTS), metavar="LIST",
                        help=f"comma-separated subset of {','.join(PARTS)}")
    parser.set_defaults(handler=_harden)


def _harden(args: argparse.Namespace) -> int:
    parts = tuple(p.strip() for p in args.parts.split(",") if p.strip())
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        print(f"dossier: error: unknown part(s) {unknown}; known: {', '.join(PARTS)}", file=sys.stderr)
        return 2
    # Libraries (the Temporal core's Rust logger among them) may write to fd 1 while the suite runs:
    # keep stdout for the table or the JSON alone by pointing fd 1 at stderr until the end.
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        figures = run(args.quick, parts, progress=lambda line: print(line, file=sys.stderr, flush=True))
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "harden.json").write_text(figures.dumps() + "\n")
        (out / "harden.md").write_text(format_table(figures, markdown=True))
    print(figures.dumps() if args.json else format_table(figures))
    return figures.exit_code()
