"""`dossier inspector`: serve the inspector, or print a login URL for one account.

    dossier inspector                      # serve on INSPECTOR_PORT (8234); prints this installation's login URL
    dossier inspector --port 9000
    dossier inspector --account ID --url   # only print a login URL for ACCOUNT ID (to the running service)
    dossier inspector --url --reveal       # a login URL whose viewer may reveal secret-class raw payloads

A login URL carries a token signed with the secret under ``DOSSIER_HOME`` and
lets its holder read that one account, for a week; the pages never take an
account from the URL. Raw payloads of the secret class are withheld unless the
URL was printed with ``--reveal`` and the viewer asks (each reveal is logged).
``dossier services up`` starts the inspector as a service.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from dossier.client import ACCOUNT_FILE, InvalidInputError, check_id
from dossier.settings import Settings
from store.errors import NotFoundError


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `inspector` command."""
    parser = subparsers.add_parser(
        "inspector", help="the web inspector: conversations, runs, contexts, provenance, why-not",
        description="Serve the inspector in the foreground (the embedded service is `dossier services up "
        "inspector`), or with --url only print a login URL. Each login URL reads one account.")
    parser.add_argument("--port", type=int, default=None, help="port to serve on (default: INSPECTOR_PORT, 8234)")
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default: 127.0.0.1)")
    parser.add_argument("--account", metavar="ID", default=None,
                        help="the account the login URL reads (default: this installation's)")
    parser.add_argument("--url", action="store_true",
                        help="print the login URL (for the running inspector service, else --host/--port) and exit")
    parser.add_argument("--reveal", action="store_true",
                        help="with --url: the viewer may reveal secret-class raw payloads (each reveal is logged)")
    parser.set_defaults(handler=_handler)


def _handler(args: argparse.Namespace) -> int:
    # The web stack (uvicorn, starlette) is imported only here: every other command starts without it.
    from dossier.inspector.auth import load_secret
    from dossier.inspector.serve import login_url, serve
    from dossier.services.inspector import running_url
    from dossier.services.process import http_base

    settings = Settings()
    missing = ""
    try:
        account: str | None = asyncio.run(_account(settings, args.account))
    except (InvalidInputError, NotFoundError) as error:
        if args.url or args.account is not None:
            print(f"dossier: error: {error}", file=sys.stderr)
            return 2
        # Serving needs no account: a fresh installation (a new compose stack) serves, and prints how to sign in.
        account, missing = None, str(error)
    secret = load_secret(settings.dossier_home)
    if args.url:
        assert account is not None
        print(login_url(running_url(settings) or http_base(args.host, args.port or settings.inspector_port),
                        secret, account, reveal=args.reveal))
        return 0

    def ready(base: str) -> None:
        if account is None:
            print(f"inspector: {base}\nno login URL yet: {missing}; then `dossier inspector --url` prints one",
                  flush=True)
            return
        print(f"inspector: {base}\nlogin URL for account {account}:\n{login_url(base, secret, account)}", flush=True)

    asyncio.run(serve(settings, host=args.host, port=args.port, ready=ready))
    return 0


async def _account(settings: Settings, given: str | None) -> str:
    """The account a login URL is for: ``--account`` (checked to exist), else this installation's."""
    if given is None:
        path = settings.dossier_home / ACCOUNT_FILE
        if not path.exists():
            raise InvalidInputError(f"this installation has no account yet ({path}); run `dossier chat` first "
                                    "or pass --account ID")
        given = path.read_text().strip()
    from dossier.runtime import open_graph
    from store import conversations

    account = check_id(given, "viewer's account")
    assert account is not None
    async with open_graph(settings) as deps, deps.sessions() as session:
        return await conversations.get_account(session, account)

