"""Orchestrates the embedded services: ensure, stop, report.

A service whose address is configured in the environment (`DATABASE_URL`,
`S3_ENDPOINT`, `TEMPORAL_ADDRESS`, `LOCAL_MODEL_URL`) is "external": it is
used as is and never started or stopped here. Every other requested service is
started from its wheel, or reused when its recorded process still runs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from types import ModuleType

from dossier.services import inspector, llm, postgres, s3, temporal, worker
from dossier.services.errors import ServiceConfigError
from dossier.services.models import Endpoints, ServiceStatus
from dossier.services.state import locked_state, read_state
from dossier.settings import Settings

#: Every service, in start order. Each module has NAME, start, stop and status.
#: The model server comes before the worker, so that a worker started with it is told its URL; the inspector
#: comes last (it reads what the others serve, and links to the Temporal UI).
SERVICES: dict[str, ModuleType] = {m.NAME: m for m in (postgres, s3, temporal, llm, worker, inspector)}
#: What `ensure_services` starts unless told otherwise; Temporal, the model and the worker are opt-in.
DEFAULT_SERVICES = ("postgres", "s3")
#: What `dossier services up` starts: the whole runtime, with the local model for real-model runs, and the inspector.
FULL_STACK = ("postgres", "s3", "temporal", "llm", "worker", "inspector")

logger = logging.getLogger(__name__)


def _check_names(which: Iterable[str]) -> list[str]:
    if isinstance(which, str):  # ensure_services(s, "s3") means ("s3",), not ("s", "3")
        which = (which,)
    names = list(dict.fromkeys(which))
    unknown = [n for n in names if n not in SERVICES]
    if unknown:
        raise ServiceConfigError(f"unknown service(s) {unknown}; known: {list(SERVICES)}")
    return [n for n in SERVICES if n in names]  # dependency order, whatever the caller's


def is_external(settings: Settings, name: str) -> bool:
    """Tell whether a service is configured in the environment rather than embedded.

    Returns:
        True if its address comes from the environment.
    """
    configured = {
        "postgres": settings.database_url,
        "s3": settings.s3_endpoint,
        "temporal": settings.temporal_address,
        "llm": settings.local_model_url,
        "worker": None,  # a worker is always ours: it serves this checkout's code
        "inspector": None,  # so is the inspector
    }
    return configured[name] is not None


def ensure_services(settings: Settings, which: Iterable[str] = DEFAULT_SERVICES) -> Endpoints:
    """Start the requested embedded services unless they run already.

    Idempotent and safe to call from several processes at once: the services
    lock serialises callers, and a later caller reuses what an earlier one started.

    Args:
        which: Names of the services needed; external ones are skipped.

    Returns:
        Endpoints of the requested services plus every configured one.

    Raises:
        ServiceConfigError: For an unknown name or an unusable setup.
        ServiceStartError: If a service fails to start; services started before it keep running.
    """
    wanted = _check_names(which)
    if "worker" in wanted:  # a worker without its services would only crash-loop
        wanted = _check_names((*wanted, "postgres", "s3", "temporal"))
    if "inspector" in wanted:  # it reads the store
        wanted = _check_names((*wanted, "postgres", "s3"))
    names = [n for n in wanted if not is_external(settings, n)]
    records: dict[str, dict] = {}
    if not names:  # all external: no need to create DOSSIER_HOME or take the lock
        return _endpoints(settings, records)
    if "llm" in names and llm.running_record(read_state(settings.dossier_home).get("llm")) is None:
        # A first download and assembly of the weights takes a while: do it under the model
        # file's own lock, so that callers who want other services are not held up meanwhile.
        llm.prepare(settings)
    with locked_state(settings.dossier_home) as state:
        for name in names:
            began = time.monotonic()
            if name == "worker":
                # The worker connects to the services started here, which it finds in its environment;
                # the model server only when it runs (the worker does not need it to start).
                needed = {n: state[n] for n in ("postgres", "s3", "temporal") if n in state}
                if llm.running_record(state.get("llm")) is not None:
                    needed["llm"] = state["llm"]
                record = worker.start(settings, state.get(name), _endpoints(settings, needed))
            elif name == "inspector":
                # The store it reads, and the Temporal UI it links to when that runs.
                needed = {n: state[n] for n in ("postgres", "s3", "temporal") if n in state}
                if "temporal" in needed and not temporal.TemporalRecord.model_validate(needed["temporal"]).is_running():
                    del needed["temporal"]
                record = inspector.start(settings, state.get(name), _endpoints(settings, needed))
            else:
                record = SERVICES[name].start(settings, state.get(name))
            state[name] = records[name] = record.model_dump()
            logger.info("%s: ready in %.2fs (pid %s)", name, time.monotonic() - began, record.pid)
    return _endpoints(settings, records)


def _endpoints(settings: Settings, records: dict[str, dict]) -> Endpoints:
    pg = postgres.PostgresRecord.model_validate(records["postgres"]) if "postgres" in records else None
    tmp = temporal.TemporalRecord.model_validate(records["temporal"]) if "temporal" in records else None
    model = llm.LlmRecord.model_validate(records["llm"]) if "llm" in records else None
    llm_url, llm_model = (settings.local_model_url, settings.local_model_name) if settings.local_model_url else (
        (model.url, model.model) if model else (None, None))
    s3_endpoint = s3_access = s3_secret = None
    s3_secure = False
    if settings.s3_endpoint is not None:
        s3_endpoint, s3_access, s3_secure = settings.s3_endpoint, settings.s3_access_key, settings.s3_secure
        s3_secret = settings.s3_secret_key.get_secret_value() if settings.s3_secret_key else None
    elif "s3" in records:
        embedded = s3.S3Record.model_validate(records["s3"])
        s3_endpoint, s3_access, s3_secret = embedded.endpoint, embedded.access_key, embedded.secret_key
    return Endpoints(
        database_url=postgres.external_url(settings) or (pg.url if pg else None),
        s3_endpoint=s3_endpoint,
        s3_access_key=s3_access,
        s3_secret_key=s3_secret,
        s3_region=settings.s3_region,
        s3_secure=s3_secure,
        s3_bucket=settings.s3_bucket,
        temporal_address=settings.temporal_address or (tmp.address if tmp else None),
        temporal_namespace=settings.temporal_namespace,
        temporal_ui_url=tmp.ui_url if tmp else None,
        llm_url=llm_url,
        llm_model=llm_model,
    )


def stop_services(settings: Settings, which: Iterable[str] = tuple(SERVICES)) -> list[str]:
    """Stop the embedded services; external ones are left alone.

    Stopping what is not running is fine. Records stay in the state file, so a
    later start reuses the same ports and S3 credentials.

    Args:
        which: Names of the services to stop; all by default.

    Returns:
        Names of the services that were running and have been stopped.

    Raises:
        ServiceConfigError: For an unknown name.
        ServiceStopError: If a service would not stop.
    """
    names = [n for n in _check_names(which) if not is_external(settings, n)]
    if not names:
        return []
    # Graceful shutdowns take 1-3 s each (weed, temporal): wait for them side by side.
    with locked_state(settings.dossier_home) as state, ThreadPoolExecutor(max_workers=len(SERVICES)) as pool:
        stopped = list(pool.map(lambda n: SERVICES[n].stop(settings, state.get(n)), names))
    return [name for name, was_running in zip(names, stopped, strict=True) if was_running]


def services_status(settings: Settings) -> list[ServiceStatus]:
    """Report every service: running, stopped or external.

    Reads the state without taking the lock, so it answers even while another
    process is starting services.

    Returns:
        One row per service, in start order.
    """
    state = read_state(settings.dossier_home)
    return [module.status(settings, state.get(name)) for name, module in SERVICES.items()]
