"""The `dossier` command line: builds the parser and dispatches to a subcommand.

Subcommands live in `dossier.commands`, one module each, and are found there
at start-up: a module that defines `register(subparsers)` adds its parser(s)
and sets `handler` (a function taking the parsed args and returning an exit
code) with `set_defaults`. Adding a command never touches this file.

Other installed distributions add commands through the `dossier.commands`
entry-point group (the development harness adds `dossier bench` that way), so
the application never imports them.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import pkgutil
import sys
from collections.abc import Sequence

from pydantic import ValidationError

import dossier.commands
from dossier.log import configure_logging
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
    for entry in sorted(importlib.metadata.entry_points(group=ENTRY_POINTS), key=lambda e: e.name):
        try:
            entry.load()(subparsers)
        except Exception as error:  # a broken plugin must not take the built-in commands down with it
            _unavailable(subparsers, entry, error)
    return parser


ENTRY_POINTS = "dossier.commands"
"""Entry-point group of commands from other distributions: ``name = "module:register"``."""


def _unavailable(subparsers: argparse._SubParsersAction, entry: importlib.metadata.EntryPoint,
                 error: Exception) -> None:
    """A command whose plugin failed to load: it says why instead of vanishing."""
    where = entry.dist.name if entry.dist else entry.value
    message = f"the {entry.name!r} command from {where} failed to load: {type(error).__name__}: {error}"
    parser = subparsers.add_parser(entry.name, help=f"(unavailable: {type(error).__name__})", add_help=False)
    parser.add_argument("rest", nargs=argparse.REMAINDER)

    def handler(args: argparse.Namespace) -> int:
        print(f"dossier: error: {message}", file=sys.stderr)
        return 2

    parser.set_defaults(handler=handler)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI.

    Args:
        argv: Arguments without the program name; defaults to `sys.argv[1:]`.

    Returns:
        The process exit code.
    """
    args = build_parser().parse_args(argv)
    configure_logging(verbose=args.verbose)
    try:
        return args.handler(args)
    except (ServiceError, ValidationError) as e:  # ValidationError: a bad env var in Settings()
        print(f"dossier: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
