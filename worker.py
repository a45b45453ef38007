"""The Dossier worker process: every workflow and activity, on one task queue.

    python worker.py            # or: python -m worker, or: dossier worker

An entry point only: the composition root (:mod:`dossier.runtime`) connects
Postgres, S3 and Temporal (embedded unless configured), migrates the schema,
builds the graph dependencies, the tool registry and the model providers,
and polls until SIGINT or SIGTERM. Nothing imports this module.
"""

from __future__ import annotations

import asyncio

from dossier.log import configure_logging
from dossier.runtime import run_worker
from dossier.settings import Settings


def main() -> None:
    """Run the worker until SIGINT or SIGTERM."""
    configure_logging()
    asyncio.run(run_worker(Settings()))


if __name__ == "__main__":
    main()
