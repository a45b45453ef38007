"""The hardening suite's own embedded stack, in a private ``DOSSIER_HOME``.

Every part of ``dossier harden`` runs against real Postgres and S3 (and, where
it needs them, a Temporal dev server and worker) that this module starts in a
fresh temporary home. Nothing the suite kills, restarts or fills touches the
services of the checkout's ``.dossier`` or anyone else's: the suite stops
exactly what it started, in its own home, and removes the home afterwards.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from activities.deps import GraphDeps
from dossier.runtime import open_graph
from dossier.services import Endpoints, ensure_services
from dossier.services.stack import stop_services
from dossier.settings import Settings


def private_settings(home: Path) -> Settings:
    """Settings for an embedded stack in ``home`` whatever the environment says.

    Init arguments win over environment variables, so a ``DATABASE_URL`` or
    ``S3_ENDPOINT`` in the caller's shell cannot point the suite at shared services.
    """
    return Settings(dossier_home=home, database_url=None, s3_endpoint=None, s3_access_key=None,
                    s3_secret_key=None, temporal_address=None, temporal_ui_port=_free_port())


def _free_port() -> int:
    from dossier.services.process import free_ports

    return free_ports(1)[0]


@dataclass
class Stack:
    """A private stack: its settings, endpoints and the graph dependencies on it."""

    settings: Settings
    endpoints: Endpoints
    deps: GraphDeps
    services: tuple[str, ...]
    extra: dict[str, object] = field(default_factory=dict)

    def env(self, **more: str) -> dict[str, str]:
        """Environment for a ``dossier`` subprocess that uses this stack's services as external ones.

        The CLI then starts nothing: ``DATABASE_URL``, ``S3_*`` and ``TEMPORAL_ADDRESS``
        name this stack, and ``DOSSIER_HOME`` (default: the stack's home) only holds its
        account file.
        """
        e = self.endpoints
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("DATABASE_URL", "S3_", "TEMPORAL_", "DOSSIER_"))}
        env.update({
            "DOSSIER_HOME": str(self.settings.dossier_home),
            "DATABASE_URL": e.database_url or "",
            "S3_ENDPOINT": e.s3_endpoint or "",
            "S3_ACCESS_KEY": e.s3_access_key or "",
            "S3_SECRET_KEY": e.s3_secret_key or "",
            "S3_BUCKET": e.s3_bucket,
        })
        if e.temporal_address:
            env["TEMPORAL_ADDRESS"] = e.temporal_address
        env.update(more)
        return env


@asynccontextmanager
async def private_stack(services: Iterable[str] = ("postgres", "s3"), *, home: Path | None = None,
                        keep: bool = False, **overrides: object) -> AsyncIterator[Stack]:
    """Start the embedded services in a fresh home, yield them, stop them.

    Args:
        services: which embedded services to start (Postgres and S3 always).
        home: the home folder (default: a new temporary folder, removed afterwards).
        keep: leave the home folder in place (for debugging).
        **overrides: :class:`GraphDeps` fields (e.g. ``inline_max_bytes=0``).

    Yields:
        The running stack.
    """
    created = home is None
    home = home or Path(tempfile.mkdtemp(prefix="dossier-harden-"))
    settings = private_settings(home)
    wanted = tuple(dict.fromkeys(("postgres", "s3", *services)))
    try:
        endpoints = await asyncio.to_thread(ensure_services, settings, wanted)
        async with open_graph(settings, services=wanted, **overrides) as deps:
            yield Stack(settings=settings, endpoints=endpoints, deps=deps, services=wanted)
    finally:
        await asyncio.to_thread(stop_services, settings)
        if created and not keep:
            shutil.rmtree(home, ignore_errors=True)
