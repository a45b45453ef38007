"""Serving the inspector: the process behind `dossier inspector` and the embedded `inspector` service.

    await serve(Settings(), host="127.0.0.1", port=8234)
    print(login_url("http://127.0.0.1:8234", load_secret(home), account_id))

It reads the store the same way the worker does (`dossier.runtime.open_graph`,
with `DATABASE_URL` / `S3_*` from the environment or the embedded services),
and links runs to the Temporal UI named by `TEMPORAL_UI_URL`, else the
embedded dev server's UI when it runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import uvicorn

from dossier.inspector.app import create_app
from dossier.inspector.auth import issue_token, load_secret
from dossier.runtime import open_graph
from dossier.services.process import http_base
from dossier.services.state import read_state
from dossier.settings import Settings


def temporal_ui_base(settings: Settings) -> str | None:
    """The Temporal Web UI to link runs to: ``TEMPORAL_UI_URL``, else the embedded server's while it runs."""
    if settings.temporal_ui_url:
        return settings.temporal_ui_url
    if settings.temporal_address is not None:  # an external server whose UI nobody named
        return None
    from dossier.services.temporal import TemporalRecord

    record = read_state(settings.dossier_home).get("temporal")
    if not record:
        return None
    temporal = TemporalRecord.model_validate(record)
    return temporal.ui_url if temporal.is_running() else None


def login_url(base: str, secret: bytes, account_id: str, *, reveal: bool = False) -> str:
    """The URL that signs a browser in as a viewer of ``account_id`` (``reveal``: one who may ask to see
    secret-class raw payloads, each reveal logged)."""
    return f"{base.rstrip('/')}/login?token={issue_token(secret, account_id, reveal=reveal)}"


async def serve(settings: Settings, *, host: str = "127.0.0.1", port: int | None = None,
                ready: Callable[[str], None] | None = None) -> None:
    """Serve the inspector until interrupted.

    Args:
        settings: the configuration (store, Temporal UI, ``DOSSIER_HOME`` for the token secret).
        host: the interface to bind (loopback by default: the login URL is the only key).
        port: the port (default: ``INSPECTOR_PORT``).
        ready: called with the base URL once the server listens.
    """
    port = port or settings.inspector_port
    async with open_graph(settings) as deps:
        app = create_app(deps, secret=load_secret(settings.dossier_home), temporal_ui=temporal_ui_base(settings),
                         namespace=settings.temporal_namespace)
        server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off"))
        task = asyncio.create_task(server.serve())
        while not server.started and not task.done():
            await asyncio.sleep(0.05)
        if server.started and ready is not None:
            ready(http_base(host, port))
        await task


__all__ = ["login_url", "serve", "temporal_ui_base"]
