"""`dossier memory add|list|forget|confirm|reject`: the user memories of this installation's account.

User memories are facts about the user (preferences, standing instructions)
that every later context of the account may carry. Only the user writes one:
`add` directly, or `confirm` for a memory a model proposed with the `remember`
tool (its turn waits for the answer; `reject` writes nothing). `list` and
`forget` only ever see the current account's memories.
"""

from __future__ import annotations

import argparse
import json

from dossier.client import DossierClient
from dossier.commands.agent import _refusing, _run, _text, _with_client


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `memory` and its actions."""
    parser = subparsers.add_parser("memory", help="user memories: facts about you every context may carry")
    actions = parser.add_subparsers(title="actions", metavar="ACTION", required=True)

    add = actions.add_parser("add", help="remember TEXT about the user ('-' reads stdin)")
    add.add_argument("text")
    add.set_defaults(handler=_refusing(lambda args: _run(_add(_text(args.text, "memory")))))

    listing = actions.add_parser("list", help="this account's memories, oldest first")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=lambda args: _run(_with_client(lambda c: _list(c, args))))

    forget = actions.add_parser("forget", help="delete a memory by id")
    forget.add_argument("memory_id")
    forget.set_defaults(handler=lambda args: _run(_with_client(lambda c: _forget(c, args))))

    for name, confirmed in (("confirm", True), ("reject", False)):
        action = actions.add_parser(name, help=f"{name} a memory a model proposed (a waiting 'remember' call)")
        action.add_argument("tool_call_id")
        action.set_defaults(handler=lambda args, confirmed=confirmed: _run(
            _with_client(lambda c: _answer(c, args, confirmed))))


async def _add(text: str) -> int:
    async def work(client: DossierClient) -> int:
        memory = await client.memories.add(text)
        print(f"remembered {memory.id}")
        return 0
    return await _with_client(work)


async def _list(client: DossierClient, args: argparse.Namespace) -> int:
    rows = await client.memories.list()
    if args.json:
        print(json.dumps([row.model_dump(mode="json") for row in rows], indent=2))
        return 0
    if not rows:
        print("no memories")
    for row in rows:
        print(f"{row.id}  {row.text}")
    return 0


async def _forget(client: DossierClient, args: argparse.Namespace) -> int:
    await client.memories.forget(args.memory_id)
    print(f"forgot {args.memory_id}")
    return 0


async def _answer(client: DossierClient, args: argparse.Namespace, confirmed: bool) -> int:
    workflow_id = await client.answer_memory(args.tool_call_id, confirmed=confirmed)
    print(f"{'confirmed' if confirmed else 'rejected'}: {args.tool_call_id} (turn {workflow_id} resumes)")
    return 0
