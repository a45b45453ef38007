"""`dossier schedule create|list|trigger|pause|delete`: recurring agent jobs as Temporal Schedules."""

from __future__ import annotations

import argparse
import json
from datetime import timedelta

from dossier.client import DossierClient
from dossier.commands.agent import _run, _with_client


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `schedule` and its actions."""
    parser = subparsers.add_parser("schedule", help="recurring agent jobs (Temporal Schedules)")
    actions = parser.add_subparsers(title="actions", metavar="ACTION", required=True)

    create = actions.add_parser("create", help="every N seconds, run an agent turn on PROMPT")
    create.add_argument("schedule_id")
    create.add_argument("--every", type=float, required=True, metavar="SECONDS")
    create.add_argument("--model", default="scripted:digest", metavar="SPEC")
    create.add_argument("--conversation", metavar="ID", help="post runs into this conversation (default: new)")
    create.add_argument("--paused", action="store_true")
    create.add_argument("prompt")
    create.set_defaults(handler=lambda args: _run(_with_client(lambda c: _create(c, args))))

    listing = actions.add_parser("list", help="schedules with their recent and next runs")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=lambda args: _run(_with_client(lambda c: _list(c, args))))

    for name, help_ in (("trigger", "fire now"), ("pause", "pause"), ("unpause", "resume firing"),
                        ("delete", "delete (past runs stay in the graph)")):
        action = actions.add_parser(name, help=help_)
        action.add_argument("schedule_id")
        action.set_defaults(handler=lambda args, name=name: _run(_with_client(lambda c: _act(c, name, args))))


async def _create(client: DossierClient, args: argparse.Namespace) -> int:
    await client.schedules.create(args.schedule_id, args.prompt, every=timedelta(seconds=args.every),
                                 model=args.model, conversation_id=args.conversation, paused=args.paused)
    print(f"created schedule {args.schedule_id}: every {args.every:g} s, model {args.model}")
    return 0


async def _list(client: DossierClient, args: argparse.Namespace) -> int:
    rows = await client.schedules.list()
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print("no schedules")
    for row in rows:
        state = "paused" if row["paused"] else "active"
        print(f"{row['schedule_id']:<24} {state:<7} recent {len(row['recent_runs'])}  next {', '.join(row['next_runs'])}")
    return 0


async def _act(client: DossierClient, action: str, args: argparse.Namespace) -> int:
    if action == "trigger":
        await client.schedules.trigger(args.schedule_id)
    elif action in ("pause", "unpause"):
        await client.schedules.pause(args.schedule_id, paused=action == "pause")
    else:
        await client.schedules.delete(args.schedule_id)
    print(f"{action}: {args.schedule_id}")
    return 0
