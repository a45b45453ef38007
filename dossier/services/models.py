"""What the service stack hands back: endpoints to connect to, and status rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from dossier.settings import to_asyncpg_url

#: `external` means configured in the environment (e.g. `DATABASE_URL`): not ours to start or stop.
ServiceState = Literal["running", "stopped", "external"]


@dataclass(frozen=True)
class Endpoints:
    """Where each service answers, whether embedded or configured.

    A field is None when its service is neither configured in the environment
    nor among the services that were ensured.

    Attributes:
        database_url: libpq URL (`postgresql://...`), accepted by `asyncpg.connect()`.
        s3_endpoint: S3 `host:port`.
        s3_access_key: S3 access key.
        s3_secret_key: S3 secret key (kept out of `repr`).
        s3_region: S3 region.
        s3_secure: Whether S3 speaks HTTPS.
        s3_bucket: The artifacts bucket.
        temporal_address: Temporal frontend `host:port`.
        temporal_namespace: Temporal namespace.
        temporal_ui_url: Temporal Web UI URL (embedded dev server only).
        llm_url: OpenAI-compatible base URL of the local model server (`http://127.0.0.1:PORT/v1`).
        llm_model: The model name to ask that server for.
    """

    database_url: str | None
    s3_endpoint: str | None
    s3_access_key: str | None
    s3_secret_key: str | None = field(repr=False)
    s3_region: str
    s3_secure: bool
    s3_bucket: str
    temporal_address: str | None
    temporal_namespace: str
    temporal_ui_url: str | None
    llm_url: str | None = None
    llm_model: str | None = None

    @property
    def sqlalchemy_url(self) -> str | None:
        """The database URL in SQLAlchemy's `postgresql+asyncpg://` form."""
        return None if self.database_url is None else to_asyncpg_url(self.database_url)


@dataclass(frozen=True)
class ServiceStatus:
    """One row of `dossier services status`.

    Attributes:
        name: Service name (`postgres`, `s3`, `temporal`, `llm`, `worker`).
        state: `running`, `stopped`, or `external` when configured in the environment.
        pid: Process id while running.
        endpoint: Where clients connect (URL or `host:port`), when known.
        detail: Extra information, such as the Temporal UI URL.
    """

    name: str
    state: ServiceState
    pid: int | None = None
    endpoint: str | None = None
    detail: str = ""
