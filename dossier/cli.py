"""The `dossier` command line: builds the parser and dispatches to a subcommand.

Subcommands live in `dossier.commands`, one module each, and are found there
at start-up: a module that defines `register(subparsers)` adds its parser(s)
and sets `handler` (a function taking the parsed args and returning an exit
code) with `set_defaults`. Adding a command never touches this file.

Other installed distributions add commands through the `dossier.commands`
entry-point group (the development harness adds `dossier bench` that way), so
the application never imports them.

Every error ends the command with one line on stderr, ``dossier: error: ...``,
and a non-zero exit code (1, or 2 for a request refused as given); ``-v``
adds the whole message and the traceback above it.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import os
import pkgutil
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

from pydantic import ValidationError

import dossier.commands
from dossier.log import configure_logging
from dossier.services.errors import ServiceError


class _Parser(argparse.ArgumentParser):
    """A parser whose usage errors are one line too (subcommand parsers inherit the class)."""

    def error(self, message: str) -> NoReturn:
        """Print one line naming the command and how to get its help, then exit with code 2."""
        self.exit(2, f"dossier: error: {self.prog}: {message} (see '{self.prog} -h')\n")


def build_parser() -> argparse.ArgumentParser:
    """Build the top-level parser with every subcommand in `dossier.commands`.
    """
    parser = _Parser(prog="dossier", description="A durable runtime for tool-using LLM agents.")
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


ERROR_LINE_MAX = 1000
"""Longest error line printed without ``-v``; the rest is cut."""


def error_line(error: BaseException | str) -> str:
    """An error message as one line: its lines joined with `` | ``, cut at :data:`ERROR_LINE_MAX`.

    Args:
        error: The exception, or a message.

    Returns:
        The line, without the ``dossier: error:`` prefix.
    """
    text = str(error) if not isinstance(error, BaseException) or str(error) else type(error).__name__
    line = " | ".join(part.strip() for part in text.splitlines() if part.strip())
    if len(line) > ERROR_LINE_MAX:
        line = line[:ERROR_LINE_MAX] + "... (-v shows the whole message)"
    return line


def fail(error: BaseException | str, code: int = 1) -> int:
    """Report an error as one line on stderr.

    Args:
        error: The exception, or a message.
        code: The exit code to return.

    Returns:
        ``code``.
    """
    print(f"dossier: error: {error_line(error)}", file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI.

    Args:
        argv: Arguments without the program name; defaults to `sys.argv[1:]`.
    """
    args = build_parser().parse_args(argv)
    configure_logging(verbose=args.verbose)
    try:
        return args.handler(args)
    except ServiceError as e:
        _traceback(e, args.verbose)
        return fail(e)
    except ValidationError as e:  # a bad env var in Settings()
        _traceback(e, args.verbose)
        return fail(_invalid(e))
    except KeyboardInterrupt:
        print("dossier: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `dossier runs | head`: the reader left, which is not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit flush cannot fail again
        return 141
    except Exception as e:  # anything else is still one line, never a bare traceback
        _traceback(e, args.verbose)
        return fail(f"{type(e).__name__}: {error_line(e)}")


def _invalid(error: ValidationError) -> str:
    """A pydantic error as one short line; a setting is named by its env var."""
    settings = error.title == "Settings"
    problems = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"])
        problems.append(f"{where.upper() if settings else where}: {item['msg']}")
    return ("bad setting " if settings else f"invalid {error.title}: ") + "; ".join(problems)


def _traceback(error: BaseException, verbose: bool) -> None:
    if verbose:
        traceback.print_exception(error, file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
