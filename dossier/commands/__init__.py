"""CLI subcommands, one module each, discovered by `dossier.cli`.

A command module defines::

    def register(subparsers: argparse._SubParsersAction) -> None:
        parser = subparsers.add_parser("bench", help="...")
        parser.set_defaults(handler=run)   # run(args) -> int exit code

Every module here is imported on each CLI start, so import heavy libraries
inside the handler, not at module level.
"""
