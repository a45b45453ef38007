"""`python -m dossier.inspector --port N`: the inspector's server process (what the embedded service runs)."""

from __future__ import annotations

import argparse
import asyncio

from dossier.inspector.serve import serve
from dossier.log import configure_logging
from dossier.settings import Settings

READY_LINE = "inspector listening on"
"""What the process prints once it serves (the service waits for its health check, not for this)."""


def main() -> None:
    """Parse ``--host`` / ``--port`` and serve until SIGTERM or Ctrl-C."""
    parser = argparse.ArgumentParser(prog="python -m dossier.inspector")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=None)
    args = parser.parse_args()
    configure_logging(verbose=False)
    asyncio.run(serve(Settings(), host=args.host, port=args.port,
                      ready=lambda url: print(f"{READY_LINE} {url}", flush=True)))


if __name__ == "__main__":
    main()
