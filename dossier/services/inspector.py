"""The embedded inspector: `python -m dossier.inspector` as a background service.

Started after Postgres and S3 (and Temporal and the worker, when they are
wanted too), with their addresses in its environment, like the worker. It
prefers ``INSPECTOR_PORT`` (8234) and falls back to a free port when that one
is taken; it is ready when ``/healthz`` answers. ``dossier inspector --url``
prints a login URL for it, and the client links run summaries in the Temporal
UI to it (:func:`running_url`) unless ``INSPECTOR_URL`` names another one.
"""

from __future__ import annotations

import sys
import urllib.request
from pathlib import Path
from typing import Any

from dossier.services.models import Endpoints, ServiceStatus
from dossier.services.process import LOCALHOST, ProcessRecord, free_ports, port_is_free, spawn, stop_recorded
from dossier.services.process import terminate, wait_healthy
from dossier.services.state import read_state
from dossier.services.worker import worker_environment
from dossier.settings import Settings

NAME = "inspector"
START_TIMEOUT = 60.0


class InspectorRecord(ProcessRecord):
    """What `services.json` remembers about the embedded inspector."""

    port: int

    @property
    def url(self) -> str:
        """Base URL."""
        return f"http://{LOCALHOST}:{self.port}"


def folder(settings: Settings) -> Path:
    """The service folder (`$DOSSIER_HOME/inspector`)."""
    return settings.dossier_home / "inspector"


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/healthz", timeout=2) as response:  # noqa: S310 - our own loopback URL
            return response.status == 200
    except OSError:
        return False


def start(settings: Settings, record: dict[str, Any] | None, endpoints: Endpoints) -> InspectorRecord:
    """Start the inspector, or reuse the running one.

    Args:
        settings: Settings (``inspector_port``, ``dossier_home``).
        record: The previous record from the state file, if any.
        endpoints: The services it reads (already running); the Temporal UI for its links.
    """
    old = InspectorRecord.model_validate(record) if record else None
    if old is not None and old.is_running():
        return old
    port = settings.inspector_port
    if not port_is_free(port):
        port = old.port if old is not None and port_is_free(old.port) else free_ports(1)[0]
    home = folder(settings)
    home.mkdir(parents=True, exist_ok=True)
    env = worker_environment(settings, endpoints)
    ui = settings.temporal_ui_url or endpoints.temporal_ui_url
    if ui:
        env["TEMPORAL_UI_URL"] = ui
    log_path = home / "inspector.log"
    handle = spawn([sys.executable, "-m", "dossier.inspector", "--port", str(port)], log_path, cwd=home, env=env)
    new = InspectorRecord(**handle.identity(), port=port)
    try:
        wait_healthy(lambda: _healthy(new.url), what="inspector", handle=handle, log_path=log_path,
                     timeout=START_TIMEOUT)
    except BaseException:
        terminate(handle)
        raise
    return new


def running_url(settings: Settings) -> str | None:
    """The running inspector service's base URL, from the state file (``None`` while it does not run).

    The service may have fallen back to a free port: this is the port it really serves on.
    """
    record = read_state(settings.dossier_home).get(NAME)
    if not record:
        return None
    found = InspectorRecord.model_validate(record)
    return found.url if found.is_running() else None


def stop(settings: Settings, record: dict[str, Any] | None) -> bool:
    """Stop the inspector (SIGTERM, then SIGKILL)."""
    return stop_recorded(InspectorRecord, record)


def status(settings: Settings, record: dict[str, Any] | None) -> ServiceStatus:
    """Report the inspector row for `dossier services status`."""
    old = InspectorRecord.model_validate(record) if record else None
    if old is None or not old.is_running():
        return ServiceStatus(NAME, "stopped", detail=str(folder(settings) / "inspector.log"))
    return ServiceStatus(NAME, "running", pid=old.pid, endpoint=old.url,
                         detail="login URL: dossier inspector --url [--account ID]")
