"""`dossier retention run|schedule` and `dossier delete-account ACCOUNT_ID`."""

from __future__ import annotations

import argparse
import json
from datetime import datetime

from dossier.client import ClientError, DossierClient
from dossier.commands.agent import _run, _with_client
from policy.retention import check_collection_time
from dossier.retention import RetentionError, delete_account, ensure_retention_schedule, run_retention


def collection_time(text: str) -> datetime:
    """``--now``: an ISO time with a zone, within the range a collection supports (else a usage error)."""
    try:
        return check_collection_time(datetime.fromisoformat(text))
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `retention` (run, schedule) and `delete-account`."""
    parser = subparsers.add_parser("retention", help="apply the retention classes (garbage collection)")
    actions = parser.add_subparsers(title="actions", metavar="ACTION", required=True)
    run = actions.add_parser("run", help="fire the retention schedule now and wait for its run")
    run.add_argument("--now", type=collection_time, metavar="ISO_TIME",
                     help="apply the rules as of this time instead (runs directly, not through the schedule)")
    run.add_argument("--json", action="store_true")
    run.set_defaults(handler=lambda args: _run(_with_client(lambda c: _collect(c, args))))
    schedule = actions.add_parser("schedule", help="create the daily retention schedule (a no-op if it exists)")
    schedule.set_defaults(handler=lambda args: _run(_with_client(_schedule)))

    delete = subparsers.add_parser("delete-account", help="delete every row and object of an account (durable)")
    delete.add_argument("account_id")
    delete.add_argument("--json", action="store_true")
    delete.set_defaults(handler=lambda args: _run(_with_client(lambda c: _delete(c, args))))


async def _collect(client: DossierClient, args: argparse.Namespace) -> int:
    try:
        result = await run_retention(client.temporal, client.settings.temporal_task_queue, now=args.now)
    except RetentionError as error:
        raise ClientError(str(error)) from error
    if args.json:
        print(result.model_dump_json(indent=2))
        return 0
    print(f"retention run at {result.now.isoformat()}")
    for action, count in sorted(result.actions.items()):
        print(f"  {action:<28} {count}")
    if not result.actions:
        print("  nothing was due")
    return 0


async def _schedule(client: DossierClient) -> int:
    schedule_id = await ensure_retention_schedule(client.temporal, client.settings.temporal_task_queue)
    print(f"retention schedule {schedule_id}")
    return 0


async def _delete(client: DossierClient, args: argparse.Namespace) -> int:
    try:
        result = await delete_account(client.temporal, client.deps, client.settings.temporal_task_queue,
                                      args.account_id)
    except RetentionError as error:
        raise ClientError(str(error)) from error
    if args.json:
        print(json.dumps({"account_id": args.account_id, **result.model_dump()}))
    else:
        print(f"deleted account {args.account_id}: {result.rows_deleted} rows, {result.objects_deleted} objects")
    return 0
