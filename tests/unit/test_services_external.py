"""The service stack with everything configured in the environment: nothing starts."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dossier.commands.services import format_table
from dossier.services import ServiceConfigError, ServiceStatus, ensure_services, services_status, stop_services
from dossier.services.state import locked_state, read_state
from dossier.services.worker import worker_environment
from dossier.settings import Settings


@pytest.fixture
def external(tmp_path: Path) -> Settings:
    return Settings(
        _env_file=None,
        dossier_home=tmp_path / "home",
        database_url="postgresql+asyncpg://root@db.example:5432/app",
        s3_endpoint="s3.example:9000",
        s3_access_key="AK",
        s3_secret_key="SK",
        s3_secure=True,
        temporal_address="temporal.example:7233",
        local_model_url="http://llm.example:8080/v1",
        local_model_name="some-model",
        dossier_models_dir=tmp_path / "models",
    )


def test_configured_services_are_used_as_they_are(external: Settings) -> None:
    endpoints = ensure_services(external, ["postgres", "s3", "temporal"])
    assert endpoints.database_url == "postgresql://root@db.example:5432/app"
    assert endpoints.sqlalchemy_url == "postgresql+asyncpg://root@db.example:5432/app"
    assert (endpoints.s3_endpoint, endpoints.s3_access_key, endpoints.s3_secret_key) == ("s3.example:9000", "AK", "SK")
    assert endpoints.s3_secure is True
    assert endpoints.temporal_address == "temporal.example:7233"
    assert endpoints.temporal_ui_url is None
    # Like every configured service, the model server is reported even when not asked for.
    assert (endpoints.llm_url, endpoints.llm_model) == ("http://llm.example:8080/v1", "some-model")
    assert ensure_services(external, ["llm"]) == endpoints
    assert "SK" not in repr(endpoints)
    assert not external.dossier_home.exists()  # nothing to keep there
    assert not external.dossier_models_dir.exists()  # nor weights to fetch
    # The worker and the inspector are never external (they serve this checkout's code), and nothing started them.
    rows = services_status(external)
    assert [row.name for row in rows] == ["postgres", "s3", "temporal", "llm", "worker", "inspector"]
    assert [row.state for row in rows] == ["external"] * 4 + ["stopped"] * 2
    assert rows[3].endpoint == "http://llm.example:8080/v1"
    assert stop_services(external) == []


def test_a_worker_is_told_the_model_server(external: Settings) -> None:
    env = worker_environment(external, ensure_services(external, ["postgres", "s3", "temporal", "llm"]))
    assert (env["LOCAL_MODEL_URL"], env["LOCAL_MODEL_NAME"]) == ("http://llm.example:8080/v1", "some-model")


def test_a_worker_in_dossier_home_finds_the_agents_file_and_its_modules(external: Settings, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DOSSIER_AGENTS_FILE", raising=False)
    endpoints = ensure_services(external, ["postgres", "s3", "temporal"])
    assert "DOSSIER_AGENTS_FILE" not in worker_environment(external, endpoints)
    (tmp_path / "agents.toml").write_text('[agents.a]\nmodel = "scripted:analyst"\n')
    env = worker_environment(external, endpoints)
    assert env["DOSSIER_AGENTS_FILE"] == str(tmp_path / "agents.toml")  # absolute: the worker runs elsewhere
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(tmp_path)  # tool modules import from here


def test_unknown_service_names_are_rejected(external: Settings) -> None:
    with pytest.raises(ServiceConfigError, match="bogus"):
        ensure_services(external, ["postgres", "bogus"])
    ensure_services(external, "s3")  # a bare name, not an iterable of letters
    with pytest.raises(ServiceConfigError, match="model"):
        ensure_services(external, ["model"])  # the service is called llm


def test_state_file_is_private_and_survives_a_failed_block(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), locked_state(tmp_path) as state:
        state["s3"] = {"pid": 1}
        raise RuntimeError("a later service failed")
    assert read_state(tmp_path) == {"s3": {"pid": 1}}
    assert json.loads((tmp_path / "services.json").read_text()) == {"s3": {"pid": 1}}
    assert (tmp_path / "services.json").stat().st_mode & 0o077 == 0
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_status_table_is_aligned() -> None:
    table = format_table(
        [
            ServiceStatus("postgres", "running", 42, "postgresql://postgres:@/postgres?host=/x"),
            ServiceStatus("s3", "stopped", detail="/home/s3"),
        ]
    )
    lines = table.splitlines()
    assert lines[0].split() == ["SERVICE", "STATE", "PID", "ENDPOINT"]
    assert lines[2].split() == ["s3", "stopped", "-", "-", "/home/s3"]
    assert len({line.index(line.split()[1]) for line in lines}) == 1  # STATE column lines up
