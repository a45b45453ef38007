"""The embedded Dossier worker: `python -m worker` as a background service.

It is started after Postgres, S3 and Temporal, with their addresses in its
environment, so it connects to exactly the services this stack runs (and
never takes the services lock itself). It counts as ready once its log says
it is polling; the URL its log names for ``/metrics`` (another port than
``METRICS_PORT``'s default when another worker on this host holds that one)
is kept in the services state and shown by `dossier services status`. A running worker keeps the code it started with: after
changing the code, `dossier services down worker` and up again.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

from contracts import TASK_QUEUE
from dossier.agents import agents_file_path
from dossier.services.models import Endpoints, ServiceStatus
from dossier.services.process import ProcessRecord, spawn, stop_recorded, terminate, wait_healthy
from dossier.settings import Settings

NAME = "worker"
START_TIMEOUT = 60.0
READY_LINE = "worker polling"
"""What the worker logs (``dossier.runtime.run_worker``) once it polls the task queue."""


class WorkerRecord(ProcessRecord):
    """What `services.json` remembers about the embedded worker."""

    task_queue: str = TASK_QUEUE
    metrics_url: str | None = None
    """Where it serves ``/metrics``, as its log says (the default port may have been taken by another worker on
    this host); ``None`` when it serves none."""


def metrics_url(log: str) -> str | None:
    """The metrics URL a worker's log names (:data:`dossier.telemetry.METRICS_LINE`), if it serves any."""
    from dossier.telemetry import METRICS_LINE  # not at import: dossier.telemetry imports this package

    found = re.search(re.escape(METRICS_LINE) + r" (http://\S+/metrics)", log)
    return found.group(1) if found else None


def folder(settings: Settings) -> Path:
    """The service folder (`$DOSSIER_HOME/worker`)."""
    return settings.dossier_home / "worker"


def worker_environment(settings: Settings, endpoints: Endpoints) -> dict[str, str]:
    """The environment that points a worker process at exactly these services."""
    env = dict(os.environ)
    pairs = {
        "DATABASE_URL": endpoints.database_url,
        "S3_ENDPOINT": endpoints.s3_endpoint,
        "S3_ACCESS_KEY": endpoints.s3_access_key,
        "S3_SECRET_KEY": endpoints.s3_secret_key,
        "S3_REGION": endpoints.s3_region,
        "S3_SECURE": "true" if endpoints.s3_secure else "false",
        "S3_BUCKET": endpoints.s3_bucket,
        "TEMPORAL_ADDRESS": endpoints.temporal_address,
        "TEMPORAL_NAMESPACE": endpoints.temporal_namespace,
        "TEMPORAL_TASK_QUEUE": settings.temporal_task_queue,
        "LOCAL_MODEL_URL": endpoints.llm_url,
        "LOCAL_MODEL_NAME": endpoints.llm_model,
        "DOSSIER_HOME": str(settings.dossier_home),
        "TIKTOKEN_ENCODING": settings.tiktoken_encoding,
        "TIKTOKEN_CACHE_DIR": os.environ.get("TIKTOKEN_CACHE_DIR", str(settings.dossier_home / "tiktoken-cache")),
    }
    env.update({key: value for key, value in pairs.items() if value is not None})
    # The worker runs in DOSSIER_HOME: the agents file in force here, and the modules it names, are found
    # from this working directory (an absolute path, and this directory first on the worker's import path).
    if settings.dossier_skills_dir is not None:
        env["DOSSIER_SKILLS_DIR"] = str(settings.dossier_skills_dir.resolve())
    agents_file = agents_file_path(settings.dossier_agents_file)
    if agents_file is not None:
        env["DOSSIER_AGENTS_FILE"] = str(agents_file.resolve())
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))
    return env


def start(settings: Settings, record: dict[str, Any] | None, endpoints: Endpoints) -> WorkerRecord:
    """Start the worker, or reuse the running one.

    Args:
        record: The previous record from the state file, if any.
        endpoints: The services the worker must use (already running).
    """
    old = WorkerRecord.model_validate(record) if record else None
    if old is not None and old.is_running():
        return old
    home = folder(settings)
    home.mkdir(parents=True, exist_ok=True)
    log_path = home / "worker.log"
    offset = log_path.stat().st_size if log_path.exists() else 0
    handle = spawn([sys.executable, "-m", "worker"], log_path, cwd=home, env=worker_environment(settings, endpoints))
    new = WorkerRecord(**handle.identity(), task_queue=settings.temporal_task_queue)

    def since_start() -> str:
        with open(log_path, "rb") as log:
            log.seek(offset)
            return log.read().decode(errors="replace")

    try:
        wait_healthy(lambda: READY_LINE in since_start(), what="worker", handle=handle, log_path=log_path,
                     timeout=START_TIMEOUT)
    except BaseException:
        terminate(handle)
        raise
    return new.model_copy(update={"metrics_url": metrics_url(since_start())})


def stop(settings: Settings, record: dict[str, Any] | None) -> bool:
    """Stop the worker (SIGTERM lets it finish its current activity tasks, then SIGKILL)."""
    return stop_recorded(WorkerRecord, record)


def status(settings: Settings, record: dict[str, Any] | None) -> ServiceStatus:
    """Report the worker row for `dossier services status`."""
    old = WorkerRecord.model_validate(record) if record else None
    if old is None or not old.is_running():
        return ServiceStatus(NAME, "stopped", detail=str(folder(settings) / "worker.log"))
    return ServiceStatus(NAME, "running", pid=old.pid, endpoint=old.metrics_url, detail=f"task queue {old.task_queue}")
